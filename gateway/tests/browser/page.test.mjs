// The approval page in headless Chromium (Debian's /usr/bin/chromium through playwright-core), against the real
// gateway binary: a proposal appears live, approve and reject work (buttons and keyboard), a hard reset needs the
// typed branch name, restore puts the repository back, a page of another origin cannot decide, and the page stays
// readable on a narrow window. With FLUXGIT_SCREENSHOT_DIR set, it also writes the screenshots of docs/.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { git, launchBrowser, proposal, propose, startGateway, status, terminal } from './lib.mjs';

const WAIT = { timeout: 10_000 };

describe('approval page', () => {
  let gateway;
  let browser;
  let page;

  before(async () => {
    gateway = await startGateway();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (error) => assert.fail(`page error: ${error.message}`));
  });

  after(async () => {
    await browser?.close();
    await gateway?.stop();
  });

  const item = (id) => page.locator(`#queue li[data-id="${id}"]`);
  const card = (id, state) => page.locator(`#card[data-id="${id}"]${state ? `[data-status="${state}"]` : ''}`);

  async function open(id) {
    await item(id).locator('button').click();
    await card(id).waitFor(WAIT);
  }

  test('a proposal appears live, without a reload, and is approved with one click', async () => {
    await page.goto(gateway.page);
    await page.locator('#live.on').waitFor(WAIT);
    await page.getByText('Nothing is waiting').waitFor(WAIT);
    await page.evaluate(() => { window.notReloaded = true; });

    await propose(gateway, proposal('p-live', 'branch', gateway.repo, { name: 'page/live', startPoint: 'topic', checkout: false }, 'claude-code', 'start the feature from topic'));
    await item('p-live').waitFor(WAIT);
    assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page was not reloaded');
    await card('p-live', 'pending').waitFor(WAIT);
    const text = await page.locator('#card').innerText();
    for (const expected of ['branch', 'claude-code', 'self-declared', 'start the feature from topic', 'Expires in', 'page/live']) {
      assert.ok(text.includes(expected), `card lacks ${expected}:\n${text}`);
    }
    await page.locator('[data-action="approve"]').click();
    await card('p-live', 'completed').waitFor(WAIT);
    const done = await terminal(gateway, 'p-live');
    assert.equal(done.status, 'completed');
    assert.equal(done.result.newSha, git(gateway.repo, 'rev-parse', 'refs/heads/page/live'));
    assert.ok((await page.locator('#card').innerText()).includes(done.result.restorePointId));
  });

  test('a page of another origin cannot decide, even knowing the secret; reject works', async () => {
    await propose(gateway, proposal('p-no', 'branch', gateway.repo, { name: 'page/no', startPoint: 'HEAD', checkout: false }));
    // Another origin (another loopback port) posts to the page's approve route with the secret.
    const approveUrl = `${gateway.page}api/proposals/p-no/approve`;
    const evil = http.createServer((_, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(`<script>
        Promise.allSettled([
          fetch(${JSON.stringify(approveUrl)}, { method: 'POST', mode: 'no-cors', body: '{"digest":"x"}' }),
          fetch(${JSON.stringify(approveUrl)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"digest":"x"}' }),
        ]).then((results) => { document.title = results.map((result) => result.status).join(','); });
      </script>`);
    });
    await new Promise((done) => evil.listen(0, '127.0.0.1', done));
    const other = await browser.context.newPage();
    await other.goto(`http://127.0.0.1:${evil.address().port}/`);
    await other.waitForFunction(() => document.title.includes(','), null, WAIT);
    await other.close();
    evil.close();
    assert.equal((await status(gateway, 'p-no')).status, 'pending');

    await open('p-no');
    await page.locator('#reject-reason').fill('not this branch');
    await page.locator('[data-action="reject"]').click();
    await card('p-no', 'rejected').waitFor(WAIT);
    const rejected = await status(gateway, 'p-no');
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.message, 'not this branch');
  });

  test('a hard reset needs the typed branch name; restore puts everything back', async () => {
    writeFileSync(join(gateway.repo, 'b.txt'), 'bee\nuncommitted work\n');
    const head = git(gateway.repo, 'rev-parse', 'HEAD');
    const first = git(gateway.repo, 'rev-parse', 'HEAD~1');
    await propose(gateway, proposal('p-hard', 'reset', gateway.repo, { targetRef: 'HEAD~1', mode: 'hard' }, 'codex', 'drop the second commit'));
    await item('p-hard').waitFor(WAIT);
    await open('p-hard');
    const approve = page.locator('[data-action="approve"]');
    assert.equal(await page.locator('#card .expected').innerText(), 'main');
    assert.equal(await approve.isDisabled(), true);
    await page.locator('#confirm-input').fill('mian');
    assert.equal(await approve.isDisabled(), true);
    // The server checks it too: a request from the page itself with the wrong name is refused.
    const forced = await page.evaluate(async () => {
      const csrf = document.querySelector('meta[name="fluxgit-csrf"]').content;
      const card = await (await fetch('api/proposals/p-hard')).json();
      const response = await fetch('api/proposals/p-hard/approve', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-fluxgit-csrf': csrf },
        body: JSON.stringify({ digest: card.digest, confirmation: 'mian' }),
      });
      return response.status;
    });
    assert.equal(forced, 422);
    assert.equal((await status(gateway, 'p-hard')).status, 'pending');
    assert.equal(git(gateway.repo, 'rev-parse', 'HEAD'), head);

    await page.locator('#confirm-input').fill('main');
    assert.equal(await approve.isDisabled(), false);
    await approve.click();
    await card('p-hard', 'completed').waitFor(WAIT);
    assert.equal(git(gateway.repo, 'rev-parse', 'HEAD'), first);
    assert.equal(git(gateway.repo, 'status', '--porcelain'), '');

    const restore = page.locator('[data-action="restore"]');
    await restore.click();
    await page.locator('[data-action="restore"].armed').waitFor(WAIT);
    await restore.click();
    await page.locator('[data-role="restored"]').waitFor(WAIT);
    assert.equal(git(gateway.repo, 'rev-parse', 'HEAD'), head);
    assert.equal(readFileSync(join(gateway.repo, 'b.txt'), 'utf8'), 'bee\nuncommitted work\n');
    assert.equal(git(gateway.repo, 'status', '--porcelain'), 'M b.txt');
  });

  test('keyboard: j/k move through the queue, r then Enter rejects', async () => {
    await propose(gateway, proposal('p-key', 'branch', gateway.repo, { name: 'page/key', startPoint: 'HEAD', checkout: false }));
    await item('p-key').waitFor(WAIT);
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    await page.keyboard.press('k');
    await page.keyboard.press('k');
    await card('p-key', 'pending').waitFor(WAIT);
    await page.keyboard.press('r');
    await page.keyboard.type('rejected from the keyboard');
    await page.keyboard.press('Enter');
    await card('p-key', 'rejected').waitFor(WAIT);
    assert.equal((await status(gateway, 'p-key')).message, 'rejected from the keyboard');
  });

  test('cards show numbered diffs and the conflict preflight; readable on a narrow window', async () => {
    writeFileSync(join(gateway.repo, 'a.txt'), 'one\nTWO\nthree\n');
    await propose(gateway, proposal('p-discard', 'discard', gateway.repo, { paths: ['a.txt', 'b.txt'] }, 'aider', 'throw away the experiment in a.txt and b.txt'));
    await propose(gateway, proposal('p-merge', 'merge', gateway.repo, { sourceRef: 'clash', targetRef: 'main', strategy: 'merge' }, 'claude-code', 'bring the clash branch into main'));
    await propose(gateway, proposal('p-reset', 'reset', gateway.repo, { targetRef: 'HEAD~1', mode: 'hard' }, 'codex', 'start over from the first commit'));
    await item('p-reset').waitFor(WAIT);

    await open('p-merge');
    const preflight = page.locator('#card section[data-kind="preflight"]');
    assert.ok((await preflight.getAttribute('class')).includes('conflicts'));
    assert.ok((await preflight.innerText()).includes('a.txt'));

    await open('p-discard');
    const added = page.locator('#card table.diff tr.d-add');
    await added.first().waitFor(WAIT);
    assert.deepEqual(await added.first().locator('td').allInnerTexts(), ['', '2', '+TWO']);
    assert.deepEqual(await page.locator('#card table.diff tr.d-del').first().locator('td').allInnerTexts(), ['2', '', '-two']);

    const shots = process.env.FLUXGIT_SCREENSHOT_DIR;
    if (shots) {
      await page.setViewportSize({ width: 1280, height: 1000 });
      await page.screenshot({ path: join(shots, 'approval-page-queue.png') });
      await page.setViewportSize({ width: 1000, height: 1400 });
      await open('p-reset');
      await page.locator('#confirm-input').fill('ma');
      await page.locator('#card').screenshot({ path: join(shots, 'approval-page-card.png') });
      await page.locator('#confirm-input').fill('');
    }

    await page.setViewportSize({ width: 380, height: 800 });
    await open('p-reset');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px at 380px`);
    const box = await page.locator('[data-action="approve"]').boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 380, `approve button off screen: ${JSON.stringify(box)}`);
    await page.setViewportSize({ width: 1280, height: 860 });
  });
});
