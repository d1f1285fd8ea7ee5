// The banner of the selected agent's unavailable features (issue #23,
// state/features.ts): one line per feature, above the workspace.
import { html, nothing, type TemplateResult } from 'lit-html';
import { bannerText, type Feature, type FeatureNotices } from '../state/features';

const ORDER: Feature[] = ['checkpoints', 'watch'];

export function featureBannersView(n: FeatureNotices | undefined): TemplateResult | typeof nothing {
  const shown = ORDER.filter((f) => n?.[f] !== undefined);
  if (!shown.length) return nothing;
  return html`${shown.map(
    (f) => html`<div class="feature-banner" role="status" data-testid=${'feature-banner-' + f}>${bannerText(f, n?.[f] ?? '')}</div>`,
  )}`;
}
