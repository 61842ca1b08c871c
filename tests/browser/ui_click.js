/*
 * A person at the status page, in Debian's chromium driven by
 * playwright-core (tests/browser/package.json): it types and clicks, and
 * reads what the page shows.  tests/e2e/test_ui_click.py runs it once per
 * scene, with the cluster it set up, and checks the API's side after.
 *
 *	node ui_click.js SCENE   (the scene's facts as JSON on stdin)
 *
 * Scenes: schedule (the operator's token: the form's options against the
 * options table, a window of steps and one of time ("at +5s for 2s")
 * scheduled by clicking and seen done by every rank, refusals shown as the
 * API says them, a window cancelled by its button; the time window on the
 * line of time, done, its label whole); viewer (the viewer's token: the form and a cancel button
 * disabled with the API's reason, and the API's refusal when clicked
 * anyway); left (a node whose agent said goodbye shown "left"); restart
 * (a job's page after a coordinator restart: its windows, rate and feed);
 * timewin (a time window shown by its start, length and selector, on the
 * line of time where its time is, its label whole);
 * follower (a job's page served by a follower coordinator over etcd, every
 * datum from its copy: the straggler, the heat map, the window done).
 * Prints one JSON line of what it saw; exits 1 naming the first thing
 * that was not as expected, with a screenshot beside the facts' "shot".
 */
'use strict';

const { chromium } = require('playwright-core');

const WAIT_MS = 60000;		/* for anything the cluster must do */

function fail(msg) {
	throw new Error(msg);
}

/* Waits until the text of sel satisfies ok; returns it. */
async function waitText(page, sel, ok, what) {
	const deadline = Date.now() + WAIT_MS;
	let last = null;
	for (;;) {
		const loc = page.locator(sel);
		if (await loc.count() > 0)
			last = await loc.first().textContent();
		if (last !== null && ok(last))
			return last;
		if (Date.now() > deadline)
			fail(what + ': ' + sel + ' shows ' + JSON.stringify(last));
		await page.waitForTimeout(100);
	}
}

/* Fails unless the text of sel is all shown (no part cut off). */
async function notCut(page, sel, what) {
	const cut = await page.locator(sel).first().evaluate((e) =>
	    e.scrollWidth > e.clientWidth + 1 ||
	    e.scrollHeight > e.clientHeight + 1);
	if (cut)
		fail(what + ': its label is cut off: ' + JSON.stringify(
		    await page.locator(sel).first().textContent()));
}

/*
 * Time window id's row on the line of time: its bar in its state's color
 * (cls), its label whole; returns where its bar, its track and the lane's
 * now are.
 */
async function timeRow(page, id, cls, what) {
	const row = '#lane-time #window-' + id;
	await page.waitForSelector(row + ' .bar.st-' + cls, { timeout: WAIT_MS })
	    .catch(() => fail(what + ': no ' + cls + ' bar on the line of ' +
	    'time'));
	await notCut(page, row + ' .lbl', what);
	const box = async (sel) => page.locator(row + ' ' + sel).first()
	    .boundingBox();
	return { bar: await box('.bar'), track: await box('.track'),
	    now: await box('.now') };
}

/* The page of a job, or the lists, with the token given in the address. */
async function open(page, f, token, job) {
	await page.goto(f.url + '/ui/#token=' + encodeURIComponent(token) +
	    (job ? '&job=' + encodeURIComponent(job) : ''));
	/* A change of the fragment alone is handled after goto() returns. */
	await page.waitForFunction(() => !location.href.includes('token='),
	    null, { timeout: 10000 }).catch(() =>
	    fail('the token stayed in the address: ' + page.url()));
}

/* The form's option controls against the C options table. */
async function checkOptions(page, table) {
	for (const row of table) {
		const sel = '#opt-' + row.name;
		if (await page.locator(sel).count() !== 1)
			fail('no control for option ' + row.name);
		if (row.type === 'bool') {
			const on = await page.locator(sel).isChecked();
			if (on !== (row.default === 1))
				fail(row.name + ' shows ' + on + ', the table ' +
				    'says ' + row.default);
			continue;
		}
		const vals = await page.locator(sel + ' option').evaluateAll(
		    (os) => os.map((o) => Number(o.value)));
		const want = [];
		for (let v = row.min; v <= row.max; v++)
			want.push(v);
		if (JSON.stringify(vals) !== JSON.stringify(want))
			fail(row.name + ' offers ' + vals + ', the table ' +
			    row.min + '..' + row.max);
		const texts = await page.locator(sel + ' option').allTextContents();
		const names = row.values ? row.values.split(',') : [];
		for (let i = 0; i < names.length; i++)
			if (texts[i + 1] !== i + ' (' + names[i] + ')')
				fail(row.name + ' calls ' + i + ' ' +
				    JSON.stringify(texts[i + 1]) + ', the table ' +
				    names[i]);
		const v = Number(await page.locator(sel).inputValue());
		if (v !== row.default)
			fail(row.name + ' shows ' + v + ', the table says ' +
			    row.default);
	}
	const n = await page.locator('#s-options label').count();
	if (n !== table.length)
		fail('the form has ' + n + ' options, the table ' +
		    table.length);
}

/* Fills and submits the form; returns the result line. */
async function scheduleBy(page, form) {
	await page.locator('summary').click();
	if (form.at !== undefined) {
		await page.check('input[name="when"][value="time"]');
		await page.fill('#s-at', form.at);
		await page.fill('#s-for', form.for);
		await page.fill('#s-tol', form.tolerance || '');
	} else if (form.next !== undefined) {
		await page.check('input[name="when"][value="next"]');
		await page.fill('#s-steps', String(form.next));
		await page.fill('#s-in', String(form.in));
	} else {
		await page.check('input[name="when"][value="at"]');
		await page.fill('#s-start', String(form.start));
		await page.fill('#s-stop', String(form.stop));
	}
	await page.fill('#s-ranks', form.ranks || '');
	for (const o of form.check || [])
		await page.check('#opt-' + o);
	for (const [o, v] of Object.entries(form.select || {}))
		await page.selectOption('#opt-' + o, String(v));
	const before = await page.locator('#s-result').textContent();
	await page.click('#s-submit');
	return waitText(page, '#s-result', (t) => t !== before && t !== '',
	    'the answer to the form');
}

async function scheduleScene(page, f) {
	await open(page, f, f.operator, f.job);
	await waitText(page, '#write-note', (t) => t.includes('you may ' +
	    'schedule'), 'the operator may write');
	if (await page.locator('#s-submit').isDisabled() ||
	    await page.locator('#s-steps').isDisabled())
		fail('the form is disabled for the operator');
	await checkOptions(page, f.table);
	const seen = {};

	/* A window by clicking, seen done by every rank it targets (3 s
	 * ahead at 50 steps/s: pushed in time on a loaded machine). */
	let t = await scheduleBy(page, { next: 3, in: 150, ranks: f.ranks,
	    check: ['with_stack'], select: { profiler_level: 1 } });
	let m = /^window (\d+) scheduled: steps (\d+)-(\d+), /.exec(t);
	if (!m)
		fail('scheduling said: ' + t);
	seen.done = { id: Number(m[1]), start: Number(m[2]),
	    stop: Number(m[3]), said: t };
	seen.done.row = await waitText(page, '#window-' + m[1] + ' .lbl',
	    (s) => s.includes('done \u00b7 ' + f.nranks + '/' + f.nranks +
	    ' finished: ' + f.nranks + ' stopped'), 'the window done');
	await notCut(page, '#window-' + m[1] + ' .lbl',
	    'the window done');

	/* A time window by clicking (5 s ahead: pushed in time on a loaded
	 * machine), seen done by every rank it targets; a time the API cannot
	 * read refused in its words. */
	t = await scheduleBy(page, { at: 'tomorrow', for: '2s', ranks: '' });
	if (!t.startsWith('not scheduled: HTTP 400: at tomorrow: not RFC ' +
	    '3339') || !t.endsWith('(field at)'))
		fail('a time the API cannot read said: ' + t);
	seen.badtime = t;
	t = await scheduleBy(page, { at: '+5s', for: '2s', tolerance: '250ms',
	    ranks: f.ranks });
	m = /^window (\d+) scheduled: at (\S+) for 2 s, ranks /.exec(t);
	if (!m)
		fail('scheduling a time window said: ' + t);
	seen.timed = { id: Number(m[1]), at: m[2], said: t };
	seen.timed.row = await waitText(page, '#window-' + m[1] + ' .lbl',
	    (s) => s.startsWith('#' + m[1] + ' at ' + m[2] + ' for 2 s ') &&
	    s.includes('done \u00b7 ' + f.nranks + '/' + f.nranks +
	    ' finished: ' + f.nranks + ' stopped'), 'the time window done');
	/* On the line of time, done, before now. */
	const at = await timeRow(page, m[1], 'done', 'the time window done');
	if (at.bar.x > at.now.x)
		fail('the time window done is drawn after now: ' +
		    JSON.stringify(at));

	/* Ranks beyond the job's: scheduled, with dynprofctl's warning. */
	t = await scheduleBy(page, { start: f.far + 1000, stop: f.far + 1004,
	    ranks: '0-' + (f.nranks + 3) });
	if (!t.startsWith('window ') || !t.endsWith('. Warning: rank ' +
	    (f.nranks + 3) + ' is not one of job ' + f.job + '\'s ranks yet ' +
	    '(none is numbered ' + (f.nranks + 3) + ' or above)'))
		fail('ranks beyond the job\'s said: ' + t);
	seen.beyond = t;
	t = await scheduleBy(page, { start: f.far + 2000, stop: f.far + 2004,
	    ranks: '0-' + (f.nranks - 1) });
	if (t.includes('Warning'))
		fail('the job\'s own ranks said: ' + t);

	/* A start every rank has passed: the API's 409, in its words. */
	t = await scheduleBy(page, { start: 1, stop: 2, ranks: '' });
	if (!t.startsWith('not scheduled: HTTP 409: job ' + f.job +
	    ' is at steps ') || !t.endsWith('(field start_step)'))
		fail('a start behind every rank said: ' + t);
	seen.refused = t;

	/* A window far ahead, cancelled by its button. */
	t = await scheduleBy(page, { start: f.far, stop: f.far + 4,
	    ranks: '' });
	m = /^window (\d+) scheduled: /.exec(t);
	if (!m)
		fail('scheduling a far window said: ' + t);
	const id = Number(m[1]);
	await page.locator('#cancel-' + id).click({ timeout: WAIT_MS });
	seen.cancel = await waitText(page, '#s-result', (s) =>
	    s.startsWith('window ' + id + ' cancelled'), 'the cancel');
	seen.cancelled = { id, row: await waitText(page, '#window-' + id +
	    ' .lbl', (s) => s.includes('cancelled'), 'the window cancelled') };
	if (await page.locator('#cancel-' + id).count() !== 0)
		fail('a cancelled window still has its cancel button');
	return seen;
}

async function viewerScene(page, f) {
	await open(page, f, f.viewer, f.job);
	const note = await waitText(page, '#write-note', (t) =>
	    t.startsWith('Scheduling and cancelling are off'),
	    'the viewer may not write');
	if (note !== 'Scheduling and cancelling are off: ' + f.reason + '.')
		fail('the page says ' + JSON.stringify(note) + ', the API ' +
		    JSON.stringify(f.reason));
	if (!await page.locator('#s-submit').isDisabled() ||
	    !await page.locator('#s-steps').isDisabled() ||
	    !await page.locator('#opt-with_stack').isDisabled())
		fail('the form is enabled for a viewer');
	const btn = page.locator('#cancel-' + f.live);
	await btn.waitFor({ timeout: WAIT_MS });
	if (!await btn.isDisabled())
		fail('window ' + f.live + '\'s cancel is enabled for a viewer');
	if (await btn.getAttribute('title') !== f.reason)
		fail('the disabled cancel says ' +
		    await btn.getAttribute('title'));

	/* Enabled by hand, as a person with the developer tools might:
	 * the API refuses, and the page says so in its words. */
	const seen = { note };
	await page.evaluate(() => {
		document.getElementById('schedule-set').disabled = false;
	});
	const t = await scheduleBy(page, { start: f.far + 100,
	    stop: f.far + 104, ranks: '' });
	if (t !== 'not scheduled: HTTP 403: ' + f.reason)
		fail('a viewer\'s schedule said: ' + t);
	seen.schedule = t;
	await page.evaluate((id) => {
		document.getElementById('cancel-' + id).disabled = false;
	}, f.live);
	await page.click('#cancel-' + f.live);
	seen.cancel = await waitText(page, '#s-result', (s) =>
	    s.startsWith('window ' + f.live + ' not cancelled'),
	    'the viewer\'s cancel');
	if (seen.cancel !== 'window ' + f.live + ' not cancelled: HTTP 403: ' +
	    f.reason)
		fail('a viewer\'s cancel said: ' + seen.cancel);
	return seen;
}

async function leftScene(page, f) {
	await open(page, f, f.viewer, null);
	const row = '#nodes tbody tr:has(td:first-child:text-is("' + f.node +
	    '"))';
	const seen = {};
	seen.state = await waitText(page, row + ' td:nth-child(2)',
	    (t) => t === 'left', 'node ' + f.node + ' left');
	seen.note = await waitText(page, '#nodes-note', (t) =>
	    t.includes('1 left (their agents stopped)'), 'the nodes\' note');
	await open(page, f, f.viewer, f.job);
	seen.card = await waitText(page, '#cards .card:has(.k:text-is(' +
	    '"nodes connected / lost / left")) .v', (t) =>
	    t === (f.nnodes - 1) + ' / 0 / 1', 'the nodes card');
	seen.row = await waitText(page, '#job-nodes tbody tr:has(' +
	    'td:first-child:text-is("' + f.node + '")) td:nth-child(2)',
	    (t) => t === 'left', 'the job\'s node row');
	return seen;
}

async function restartScene(page, f) {
	await open(page, f, f.viewer, f.job);
	const seen = {};
	seen.row = await waitText(page, '#window-' + f.done + ' .lbl', (t) =>
	    t.includes('done \u00b7 ' + f.nranks + '/' + f.nranks +
	    ' finished: ' + f.nranks + ' stopped'), 'the window done');
	seen.cancelled = await waitText(page, '#window-' + f.cancelled +
	    ' .lbl', (t) => t.includes('cancelled'), 'the cancelled window');
	seen.rate = await waitText(page, '#cards .card:has(.k:text-is(' +
	    '"steps/s (median)")) .v', (t) => t !== '-' && Number(t) > 0,
	    'the rate');
	seen.feed = await waitText(page, '#feed', (t) =>
	    t.includes('window ' + f.done + ' scheduled') &&
	    t.includes('stopped window ' + f.done) &&
	    t.includes('window ' + f.cancelled + ' cancelled'),
	    'the feed before the restart');
	seen.feed = seen.feed.length;
	return seen;
}

/* A time window naming its ranks by node: its start, length and selector. */
async function timewinScene(page, f) {
	await open(page, f, f.viewer, f.job);
	const seen = {};
	seen.row = await waitText(page, '#window-' + f.timewin + ' .lbl', (t) =>
	    t.startsWith('#' + f.timewin + ' at ' + f.at + ' for 5 s ' +
	    f.ranks + ' (nodes a) \u00b7 '), 'the time window\'s label');
	/* On the line of time by its start and length: after now (600 s
	 * ahead), its end the lane's last. */
	const at = await timeRow(page, f.timewin, 'scheduled',
	    'the time window');
	if (at.bar.x <= at.now.x + at.now.width ||
	    Math.abs(at.bar.x + at.bar.width - at.track.x - at.track.width) > 2)
		fail('the time window 600 s ahead is not where its time is: ' +
		    JSON.stringify(at));
	seen.bar = at.bar;
	seen.feed = await waitText(page, '#feed', (t) =>
	    t.includes('window ' + f.timewin + ' scheduled at ' + f.at +
	    ' for 5 s'), 'the time window in the feed');
	seen.feed = seen.feed.length;
	return seen;
}

/* A follower's page: served and read from the follower alone (the page may
 * fetch nothing from another origin: a 307 to the leader would fail). */
async function followerScene(page, f) {
	/* Answers from elsewhere (a redirect followed to the leader). */
	const other = [];
	page.on('response', (r) => {
		if (!r.url().startsWith(f.url + '/'))
			other.push(r.url());
	});
	/* No token: the cluster has none. */
	await page.goto(f.url + '/ui/#job=' + encodeURIComponent(f.job));
	const seen = {};
	seen.straggler = await waitText(page, '#stragglers tbody tr.straggler ' +
	    'td:first-child', (t) => t === String(f.straggler),
	    'the straggler');
	seen.node = await waitText(page, '#strag-nodes tbody tr td:first-child',
	    (t) => t === f.node, 'the straggler\'s node');
	seen.window = await waitText(page, '#window-' + f.done + ' .lbl',
	    (t) => t.includes('done'), 'the window done');
	/* The heat map's cell of the straggler's node says it straggles
	 * (GET /v1/jobs/J/nodes, the leader's counts). */
	const cell = page.locator('#heatmap .c[data-node="' + f.node + '"]');
	const deadline = Date.now() + WAIT_MS;
	for (;;) {
		seen.cell = await cell.count() > 0 ?
		    await cell.first().getAttribute('title') : null;
		if (seen.cell !== null && seen.cell.includes('straggling'))
			break;
		if (Date.now() > deadline)
			fail('the heat map\'s cell of ' + f.node + ': ' +
			    JSON.stringify(seen.cell));
		await page.waitForTimeout(100);
	}
	seen.conn = await waitText(page, '#conn', (t) => t === 'connected',
	    'the connection');
	/* Writes go to the leader: off here, saying so. */
	seen.write = await waitText(page, '#write-note', (t) =>
	    t.includes('follows the leader'), 'the write note');
	if (other.length > 0)
		fail('the page asked another origin: ' + other.join(', '));
	return seen;
}

/* A window's traces: every rank's archive as the index has it, and the
 * ranks compared by their step times. */
async function tracesScene(page, f) {
	await open(page, f, f.viewer, f.job);
	await page.waitForSelector('#traces-' + f.done, { timeout: 30000 });
	await page.click('#traces-' + f.done);
	const seen = {};
	seen.note = await waitText(page, '#traces-note', (t) =>
	    t.startsWith(f.traces.length + ' collected, 0 failed'),
	    'the traces\' counts');
	for (const t of f.traces) {
		const row = '#traces-table tr[data-rank="' + t.rank + '"]';
		const text = await waitText(page, row, (s) =>
		    s.includes('collected') && s.includes(t.location) &&
		    s.includes(t.sha256.slice(0, 12)) &&
		    s.includes(Number(t.size).toLocaleString('en-US')),
		    'rank ' + t.rank + '\'s trace');
		if (!text.includes(t.node))
			fail('rank ' + t.rank + ': ' + text);
	}
	seen.compared = await waitText(page, '#compare-note', (t) =>
	    t.includes('ranks with steps'), 'the comparison');
	seen.rows = await page.locator('#compare-table tbody tr').count();
	if (seen.rows !== f.traces.length)
		fail('compared rows: ' + seen.rows);
	seen.straggler = await waitText(page, '#compare-straggler', (t) =>
	    t.length > 0, 'the straggler\'s line');
	return seen;
}

const SCENES = { schedule: scheduleScene, viewer: viewerScene,
    left: leftScene, restart: restartScene, timewin: timewinScene,
    follower: followerScene, traces: tracesScene };

async function main() {
	const scene = SCENES[process.argv[2]];
	if (!scene)
		fail('no scene ' + process.argv[2]);
	let input = '';
	for await (const chunk of process.stdin)
		input += chunk;
	const f = JSON.parse(input);
	const browser = await chromium.launch({ executablePath: f.chromium,
	    args: ['--no-sandbox'] });
	const page = await browser.newPage({ viewport: { width: 1400,
	    height: 2000 } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	try {
		const seen = await scene(page, f);
		if (errors.length > 0)
			fail('the page threw: ' + errors.join('; '));
		await page.screenshot({ path: f.shot, fullPage: true });
		process.stdout.write(JSON.stringify(seen) + '\n');
	} catch (e) {
		await page.screenshot({ path: f.shot, fullPage: true })
		    .catch(() => {});
		throw e;
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	process.stderr.write('ui_click: ' + e.message + '\n');
	process.exit(1);
});
