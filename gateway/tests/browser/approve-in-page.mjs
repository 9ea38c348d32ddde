// A person approving one proposal in the approval page, for the end-to-end test with the real sidecar and the
// Python MCP client (mcp/tests/e2e/test_gateway_page.py): opens PAGE_URL in headless Chromium, waits for the
// proposal to appear in the queue, opens its card, types the strong confirmation when one is asked for, clicks
// Approve, and prints the state the card shows next. Exit 1 if the proposal never appears or the approval fails.
//
//   node approve-in-page.mjs PAGE_URL PREVIEW_ID [CONFIRMATION]
import { launchBrowser } from './lib.mjs';

const [url, id, confirmation] = process.argv.slice(2);
if (!url || !id) {
  console.error('usage: node approve-in-page.mjs PAGE_URL PREVIEW_ID [CONFIRMATION]');
  process.exit(2);
}
const browser = await launchBrowser();
try {
  const page = await browser.context.newPage();
  await page.goto(url);
  const item = page.locator(`#queue li[data-id="${id}"]`);
  await item.waitFor({ timeout: 15_000 });
  await item.locator('button').click();
  await page.locator(`#card[data-id="${id}"][data-status="pending"]`).waitFor({ timeout: 10_000 });
  if (confirmation) await page.locator('#confirm-input').fill(confirmation);
  await page.locator('[data-action="approve"]').click();
  const decided = page.locator(`#card[data-id="${id}"]:not([data-status="pending"])`);
  await decided.waitFor({ timeout: 15_000 });
  const state = await decided.getAttribute('data-status');
  console.log(JSON.stringify({ previewId: id, status: state }));
  process.exitCode = ['approved', 'executing', 'completed'].includes(state) ? 0 : 1;
} finally {
  await browser.close();
}
