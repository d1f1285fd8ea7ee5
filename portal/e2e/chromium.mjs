// The system chromium the browser tests drive (Debian's; override with
// CHROMIUM_BIN). Playwright downloads no browser here.
export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
