// Runs every cell of a notebook in headless Chromium against a running
// `make lab`, the way a student would, and saves a screenshot.
//
//   make lab PORT=8899 &                 # note the token it prints
//   cd scripts/browser-check && npm install
//   node check.js http://127.0.0.1:8899/notebooks/notebooks/00-welcome.ipynb?token=... /tmp/welcome.png
//
// It prints how many cells failed, how many images and embedded viewers
// the outputs hold, and exits 1 when a cell failed. Uses Debian's
// chromium (apt-get install chromium); not part of make test.
const { chromium } = require('playwright-core');

(async () => {
  const [url, shot = '/tmp/notebook.png'] = process.argv.slice(2);
  if (!url) {
    console.error('usage: node check.js NOTEBOOK_URL_WITH_TOKEN [SCREENSHOT.png]');
    process.exit(2);
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1200 } });
  await page.goto(url);
  const idle = '#kernel_indicator_icon.kernel_idle_icon';
  await page.waitForSelector(idle, { timeout: 60000 });
  await page.evaluate(() => Jupyter.notebook.execute_all_cells());
  await page.waitForTimeout(2000);
  await page.waitForSelector(idle, { timeout: 600000 });
  await page.waitForTimeout(1000);
  const counts = await page.evaluate(() => ({
    failed: document.querySelectorAll('.output_error').length,
    images: document.querySelectorAll('.output_png img').length,
    viewers: document.querySelectorAll('.output_html iframe').length,
  }));
  console.log(`cells failed: ${counts.failed}, images: ${counts.images}, embedded viewers: ${counts.viewers}`);
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);
  await browser.close();
  process.exit(counts.failed > 0 ? 1 : 0);
})();
