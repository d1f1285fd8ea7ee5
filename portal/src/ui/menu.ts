// A keyboard-usable context menu (role=menu): arrows move, Enter/Space runs,
// Esc or Tab closes and returns focus to the element that opened it.
import { html, render } from 'lit-html';

export interface MenuItem {
  label: string;
  hint?: string;
  danger?: boolean;
  run: () => void;
}

/** The event that asks a menu to close. */
const CLOSE = 'menu-close';

/** Closes the open menu, if any (the menu in the document is the only record: no module state). */
export function closeMenu(): void {
  document.querySelector('.context-menu[role="menu"]')?.dispatchEvent(new Event(CLOSE));
}

export function openMenu(x: number, y: number, items: MenuItem[], returnTo: HTMLElement | null, label: string): void {
  closeMenu();
  const el = document.createElement('div');
  el.className = 'context-menu';
  el.setAttribute('role', 'menu');
  el.setAttribute('aria-label', label);
  el.dataset['testid'] = 'context-menu';
  const done = (focusBack: boolean) => {
    document.removeEventListener('pointerdown', outside, true);
    window.removeEventListener('resize', dismiss);
    el.remove();
    if (focusBack && returnTo?.isConnected) returnTo.focus();
  };
  const dismiss = () => done(true);
  const outside = (e: Event) => {
    if (!el.contains(e.target as Node)) done(false);
  };
  el.addEventListener(CLOSE, dismiss);
  render(
    html`${items.map(
      (it) => html`<button
        type="button"
        role="menuitem"
        tabindex="-1"
        class=${it.danger ? 'danger' : ''}
        @click=${() => {
          done(true);
          it.run();
        }}
      >
        <span>${it.label}</span>${it.hint ? html`<kbd>${it.hint}</kbd>` : ''}
      </button>`,
    )}`,
    el,
  );
  el.addEventListener('keydown', (e) => {
    const buttons = [...el.querySelectorAll<HTMLButtonElement>('[role="menuitem"]')];
    const i = buttons.indexOf(document.activeElement as HTMLButtonElement);
    const move = (n: number) => buttons[(i + n + buttons.length) % buttons.length]?.focus();
    switch (e.key) {
      case 'ArrowDown':
        move(1);
        break;
      case 'ArrowUp':
        move(-1);
        break;
      case 'Home':
        buttons[0]?.focus();
        break;
      case 'End':
        buttons[buttons.length - 1]?.focus();
        break;
      case 'Escape':
      case 'Tab':
        dismiss();
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  });
  document.body.append(el);
  const r = el.getBoundingClientRect();
  el.style.left = `${Math.max(4, Math.min(x, window.innerWidth - r.width - 4))}px`;
  el.style.top = `${Math.max(4, Math.min(y, window.innerHeight - r.height - 4))}px`;
  document.addEventListener('pointerdown', outside, true);
  window.addEventListener('resize', dismiss);
  el.querySelector<HTMLElement>('[role="menuitem"]')?.focus();
}
