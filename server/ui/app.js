/*
 * dynprof's status page: reads the admin API with the viewer (or operator)
 * token and draws it.  No library, nothing fetched from anywhere but the
 * coordinator that served the page.
 *
 * The token: given once as #token=T or ?token=T in the address (then taken
 * out of it) or typed into the form; kept in sessionStorage (this tab only)
 * and sent as "Authorization: Bearer T" with every request.
 *
 * Views: #  the jobs and nodes;  #job=J  one job: its summary, a heat map of
 * its nodes (one cell per node, nodes grouped past HEAT_CELLS_MAX), its
 * stragglers, rules, windows on a line of steps (time windows on a line of
 * time), nodes by applied generation, and a live feed of its events.  With the operator's token
 * the job's view schedules a window and cancels one (POST and DELETE on
 * /v1/jobs/J/windows, the checks dynprofctl trace gets); with the viewer's
 * the form and buttons are there, disabled, saying why.
 */
'use strict';

(function () {
	const TOKEN_KEY = 'dynprof.token';
	const SUMMARY_MS = 2000;	/* a job's summary, stragglers */
	const HEAT_MS = 5000;		/* a job's nodes (heat map) */
	const LIST_MS = 5000;		/* jobs and nodes */
	const HEAT_CELLS_MAX = 4096;	/* cells in the heat map */
	const NO_BUSY = 'repeating-linear-gradient(45deg, #c9d3e3 0 3px, ' +
	    '#eef2f8 3px 6px)';		/* a node whose ranks give no busy time */
	const FEED_MAX = 200;		/* entries kept in the live feed */
	const NODES_SHOWN = 50;		/* rows of node tables */
	const WINDOWS_SHOWN = 16;	/* windows on each line (steps, time) */
	const FEED_RETRY_MS = 2000;
	/*
	 * The options table (common/options.h), in its order: name, type,
	 * min, max, default, the names of the values 0.. (or null).
	 * tests/e2e/test_ui_click.py compares it with the C table.
	 */
	const OPTIONS = [
		['aicore_metrics', 'int', -1, 5, -1, null],
		['profiler_level', 'int', -1, 2, -1,
		    ['Level0', 'Level1', 'Level2']],
		['profile_framework', 'int', -1, 1, -1, ['time', 'all']],
		['analyse_mode', 'int', -1, 1, -1, ['sync', 'async']],
		['profile_communication', 'bool', 0, 1, 0, null],
		['parallel_strategy', 'bool', 0, 1, 0, null],
		['with_stack', 'bool', 0, 1, 0, null],
		['data_simplification', 'bool', 0, 1, 1, null],
	];

	const $ = (id) => document.getElementById(id);
	/* Node names in the order a person reads them: n2 before n10. */
	const byName = new Intl.Collator('en', { numeric: true }).compare;
	let token = null;
	let timers = [];
	let feedAbort = null;
	let view = null;	/* the job shown, null: the lists */
	let heat = null;	/* the last nodes answer of the job */
	let summary = null;
	let selNode = null;
	/* Why this token may not write (the API's words), null: it may. */
	let denied = null;
	/* The coordinator's clock less this browser's, in ms, from its last
	 * answer's Date (to the second); null: not known. */
	let skew = null;
	let tracesWin = null;	/* the window whose traces are shown */

	/* Makes an element with attributes and children (text, not HTML). */
	function el(tag, attrs, ...kids) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v === null || v === undefined)
				continue;
			if (k === 'class')
				e.className = v;
			else if (k === 'style')
				e.style.cssText = v;
			else if (k.startsWith('on'))
				e.addEventListener(k.slice(2), v);
			else
				e.setAttribute(k, v);
		}
		for (const c of kids) {
			if (c === null || c === undefined)
				continue;
			e.append(c instanceof Node ? c : String(c));
		}
		return e;
	}

	/* Replaces a table body's rows. */
	function rows(table, list) {
		const tb = $(table).tBodies[0];
		tb.replaceChildren(...list);
	}

	function num(v) {
		return v === null || v === undefined || v < 0 ? '-' :
		    Number(v).toLocaleString('en-US');
	}

	function showError(msg) {
		const e = $('error');
		e.textContent = msg || '';
		e.hidden = !msg;
	}

	/* Takes the token out of the address (fragment or query). */
	function takeToken() {
		const hash = new URLSearchParams(location.hash.slice(1));
		const query = new URLSearchParams(location.search);
		const t = hash.get('token') || query.get('token');
		if (t) {
			sessionStorage.setItem(TOKEN_KEY, t);
			hash.delete('token');
			query.delete('token');
			const q = query.toString();
			const h = hash.toString();
			history.replaceState(null, '', location.pathname +
			    (q ? '?' + q : '') + (h ? '#' + h : ''));
		}
		token = sessionStorage.getItem(TOKEN_KEY);
		$('logout').hidden = !token;
	}

	function headers() {
		return token ? { Authorization: 'Bearer ' + token } : {};
	}

	/* GETs an API path as JSON; null (said why) on failure. */
	async function api(path, signal) {
		let res;
		try {
			res = await fetch(path, { headers: headers(), signal });
		} catch (e) {
			if (e.name !== 'AbortError') {
				$('conn').textContent = 'coordinator unreachable';
				showError('cannot reach the coordinator: ' + e.message);
			}
			return null;
		}
		$('conn').textContent = 'connected';
		const date = Date.parse(res.headers.get('Date') || '');
		if (!Number.isNaN(date))
			skew = date - Date.now();
		if (res.status === 401) {
			$('login').hidden = false;
			showError(token ? 'the coordinator refused this token' :
			    'this coordinator needs a token: the viewer token ' +
			    'shows everything');
			return null;
		}
		let body = null;
		try {
			body = await res.json();
		} catch (e) {
			body = null;
		}
		if (!res.ok) {
			if (res.status !== 404)
				showError(path + ': ' + (body && body.error ||
				    'HTTP ' + res.status));
			return null;
		}
		$('login').hidden = true;
		return body;
	}

	/*
	 * Sends a write (POST, DELETE) to the API; returns { status, body }
	 * (status 0: the coordinator was not reached, body.error says why;
	 * 307: it follows another, which takes the writes: not followed, the
	 * page reads only from where it came from).
	 */
	async function write(method, path, body) {
		const h = headers();
		if (body !== undefined)
			h['Content-Type'] = 'application/json';
		let res;
		try {
			res = await fetch(path, { method, headers: h, body:
			    body === undefined ? undefined : JSON.stringify(body),
			    redirect: 'manual' });
		} catch (e) {
			return { status: 0, body: { error: 'cannot reach the ' +
			    'coordinator: ' + e.message } };
		}
		if (res.type === 'opaqueredirect')
			return { status: 307, body: { error: 'this ' +
			    'coordinator follows the leader, which takes the ' +
			    'writes: open the page at the leader to schedule ' +
			    'or cancel' } };
		let b = null;
		try {
			b = await res.json();
		} catch (e) {
			b = null;
		}
		return { status: res.status, body: b || {} };
	}

	/* An answer the API refused, in its own words. */
	function refusal(r) {
		if (r.status === 0)
			return r.body.error;
		return 'HTTP ' + r.status + ': ' + (r.body.error ||
		    'no reason given') + (r.body.field ? ' (field ' +
		    r.body.field + ')' : '');
	}

	/* Now on the coordinator's clock: this browser's, unless its answers'
	 * Date says the two are more than 2 s apart (a Date is to the
	 * second). */
	function coordNow() {
		return Date.now() + (skew !== null && Math.abs(skew) > 2000 ?
		    skew : 0);
	}

	function every(ms, fn) {
		fn();
		timers.push(setInterval(fn, ms));
	}

	function stopAll() {
		timers.forEach(clearInterval);
		timers = [];
		if (feedAbort)
			feedAbort.abort();
		feedAbort = null;
	}

	/* --- The lists: jobs and nodes. --- */

	async function loadJobs() {
		const d = await api('/v1/jobs');
		if (!d)
			return;
		showError(null);
		rows('jobs', d.jobs.map((j) => el('tr', {},
		    el('td', {}, el('a', { href: '#job=' +
			encodeURIComponent(j.job), class: 'job' }, j.job)),
		    el('td', { class: 'num' }, num(j.generation)),
		    el('td', { class: 'num' }, num(j.ranks)),
		    el('td', { class: 'num' }, num(j.nodes)),
		    el('td', { class: 'num' }, num(j.max_step)),
		    el('td', { class: 'num' }, num(j.pending_windows)))));
		if (d.jobs.length === 0)
			rows('jobs', [el('tr', {}, el('td', { colspan: 6,
			    class: 'muted' }, 'no jobs yet'))]);
	}

	async function loadNodes() {
		const d = await api('/v1/nodes');
		if (!d)
			return;
		const list = d.nodes.slice().sort((a, b) =>
		    ((b.state === 'lost') - (a.state === 'lost')) ||
		    ((b.state === 'left') - (a.state === 'left')) ||
		    byName(a.node, b.node));
		const left = d.nodes.filter((n) => n.state === 'left').length;
		$('nodes-note').textContent = d.nodes.length + ' nodes, ' +
		    d.nodes.filter((n) => n.state === 'connected').length +
		    ' connected' + (left > 0 ? ', ' + left + ' left (their ' +
		    'agents stopped)' : '') + (list.length > NODES_SHOWN ?
		    ' (lost, then left, first; the first ' + NODES_SHOWN +
		    ' shown)' : '');
		rows('nodes', list.slice(0, NODES_SHOWN).map((n) =>
		    el('tr', {},
		    el('td', {}, n.node),
		    el('td', { class: n.state === 'lost' ? 'bad' : '' },
			n.state),
		    el('td', {}, n.last_seen || '-'),
		    el('td', {}, Object.entries(n.jobs || {}).map(([j, g]) =>
			j + ': ' + g).join(', ') || '-'))));
	}

	/* --- One job. --- */

	function card(k, v, bad) {
		return el('div', { class: 'card' + (bad ? ' bad' : '') },
		    el('div', { class: 'v' }, v), el('div', { class: 'k' }, k));
	}

	/* Shows the job's summary; returns it (null if not read). */
	async function loadSummary(job) {
		const s = await api('/v1/jobs/' + encodeURIComponent(job));
		if (!s || view !== job)
			return null;
		showError(null);
		summary = s;
		if (!s.stragglers) {
			s.stragglers = await api('/v1/jobs/' +
			    encodeURIComponent(job) + '/stragglers');
		}
		$('job-gen').textContent = 'generation ' + s.generation;
		const rc = s.rank_counts || {};
		const st = s.steps || {};
		const nc = s.node_counts || {};
		const sg = s.stragglers || {};
		const cards = [
			card('ranks', num(rc.total !== undefined ? rc.total :
			    s.progress && s.progress.ranks_alive)),
			card('attached', num(rc.attached || 0)),
			card('armed', num(rc.armed || 0)),
			card('profiling', num(rc.profiling || 0)),
			card('done', num(rc.done || 0)),
			card('skipped', num(rc.skipped || 0), rc.skipped > 0),
			card('failed', num(rc.failed || 0), rc.failed > 0),
			card('gone', num(rc.gone || 0)),
			card('unknown (node lost)', num(rc.unknown || 0),
			    rc.unknown > 0),
			card('steps min / median / max', num(st.min) + ' / ' +
			    num(st.median) + ' / ' + num(st.max)),
			card('steps/s (median)', sg.median_rate === null ||
			    sg.median_rate === undefined ? '-' :
			    sg.median_rate.toFixed(2)),
			card('stragglers', num(sg.ranks || 0) + ' on ' +
			    num(sg.nodes || 0) + ' nodes', sg.ranks > 0),
			card('nodes connected / lost / left',
			    num(nc.connected) + ' / ' + num(nc.lost) + ' / ' +
			    num(nc.left || 0), nc.lost > 0),
			card('nodes on generation ' + s.generation,
			    num(nc.applied_current) + ' of ' + num(nc.total)),
		];
		$('cards').replaceChildren(...cards.map((c, i) => {
			c.id = 'card-' + i;
			return c;
		}));
		drawStragglers(sg);
		drawTimeline(s);
		return s;
	}

	/* A number to d decimals, '-' when unknown. */
	function fixed(v, d) {
		return v === null || v === undefined ? '-' : v.toFixed(d);
	}

	/* Which signal flagged a straggler, and by how much. */
	function why(w, r) {
		if (w === 'busy')
			return 'busy ' + fixed(r.busy_over_median, 2) + 'x the median';
		if (w === 'busy_change')
			return 'busy ' + fixed(r.busy_rise, 2) + 'x its own past';
		if (w === 'lag')
			return 'lag ' + num(r.lag) + ' steps';
		if (w === 'last')
			return 'last to arrive at ' + Math.round(100 *
			    r.last_share) + '% of steps, ' +
			    fixed(r.last_late_ms, 1) + ' ms after the median';
		return w;
	}

	/* The rank last to arrive at the collective most often, in words. */
	function lastArriver(sg) {
		const l = sg.last_arriver;
		if (!l)
			return '';
		return ' Last to arrive at the collective: rank ' + l.rank +
		    ', at ' + l.steps + ' of the last ' + l.of + ' steps (' +
		    Math.round(100 * l.share) + '%), ' + fixed(l.late_ms, 1) +
		    ' ms after the median' + (l.flagged ? ' (last).' :
		    ': under half, not flagged.');
	}

	function drawStragglers(sg) {
		$('strag-note').textContent = sg.updated ?
		    '(lag over ' + sg.lag_steps + ' steps, or rate ' +
		    sg.rate_drop_percent + '% under the median)' : '';
		const list = sg.worst_ranks || [];
		rows('stragglers', list.length ? list.map((r) =>
		    el('tr', { class: 'straggler' },
		    el('td', { class: 'num' }, r.rank),
		    el('td', {}, r.node),
		    el('td', { class: 'num' }, num(r.step)),
		    el('td', { class: 'num' }, num(r.lag)),
		    el('td', { class: 'num' }, r.rate === null ? '-' :
			r.rate.toFixed(2)),
		    el('td', { class: 'num' }, fixed(r.busy_ms, 1)),
		    el('td', { class: 'num' }, fixed(r.busy_score, 2)),
		    el('td', {}, (r.reasons || []).map((w) =>
			why(w, r)).join(', ')))) :
		    [el('tr', {}, el('td', { colspan: 8, class: 'muted' },
		    'no straggler'))]);
		const nb = sg.no_busy || 0;
		$('strag-busy').textContent = sg.updated ? 'Busy time (step ' +
		    'begin to the first collective): ' + num(sg.busy_ranks || 0) +
		    ' ranks give it, median ' + fixed(sg.busy_median_ms, 1) +
		    ' ms, fastest ' + fixed(sg.busy_fastest_ms, 1) + ' ms; a ' +
		    'rank straggles ' + sg.busy_percent + '% over the median ' +
		    '(busy) or as much over its own past (busy_change)' +
		    (sg.floor_ms != null ? ', and by more than ' +
		    fixed(sg.floor_ms, 1) + ' ms (5% of its steps of ' +
		    fixed(sg.step_ms, 1) + ' ms)' : '') + '. ' +
		    (nb > 0 ? num(nb) + ' ranks give no busy time (judged by ' +
		    'lag and rate only): ' + (sg.no_busy_ranks || []).join(', ') +
		    (nb > (sg.no_busy_ranks || []).length ? ', ...' : '') + '.' :
		    sg.ranks_judged > 0 ? 'Every judged rank gives one.' :
		    'No rank is judged.') + lastArriver(sg) : '';
		rows('strag-nodes', (sg.worst_nodes || []).map((n) =>
		    el('tr', {}, el('td', {}, n.node),
		    el('td', { class: 'num' }, n.ranks),
		    el('td', { class: 'num' }, num(n.min_step)))));
	}

	async function loadRules(job) {
		const d = await api('/v1/jobs/' + encodeURIComponent(job) +
		    '/rules');
		if (!d || view !== job)
			return;
		$('rules').textContent = d.rules.length === 0 ?
		    'No rules: stragglers are shown, not profiled.' :
		    d.rules.map((r) => 'Rule ' + r.id + ': on a straggler, ' +
		    'profile it and ' + r.peers + ' peers for ' + r.steps +
		    ' steps from the next multiple of ' + r.roundup +
		    ' (at most every ' + r.min_interval_s + ' s, ' +
		    r.max_per_hour + ' an hour); fired ' + r.fired_total +
		    (r.last_window ? ', last window ' + r.last_window +
		    ' on ranks ' + r.last_ranks : '') + '.').join(' ');
	}

	/* "all ranks", "rank 3", "ranks 0-7,16": a window's rank list. */
	function rankLabel(ranks) {
		if (!ranks || ranks === 'all')
			return 'all ranks';
		return (/^[0-9]+$/.test(ranks) ? 'rank ' : 'ranks ') + ranks;
	}

	/* When a window runs: its steps, or a time window's start and length. */
	function windowWhen(w) {
		if (w.at)
			return 'at ' + w.at + ' for ' + (w.duration_ms >= 1000 ?
			    (w.duration_ms / 1000) + ' s' : w.duration_ms + ' ms');
		return '[' + w.start_step + ', ' + w.stop_step + ']';
	}

	/* What named a window's ranks (its selector), '' for a rank list. */
	function selectorLabel(sel) {
		if (!sel)
			return '';
		const parts = Object.keys(sel).map((k) => k + ' ' + sel[k]);
		return parts.length ? ' (' + parts.join(', ') + ')' : '';
	}

	/*
	 * What a window's bar says and its color: a done window no targeted
	 * rank ran (every one skipped, failed, went away or missed it) is not
	 * a success, nor one some ranks did not run.
	 */
	function windowOutcome(state, rc) {
		if (rc.targeted === undefined)
			return { label: state, cls: state };
		const not = [['skipped', rc.skipped], ['failed', rc.failed],
		    ['gone', rc.gone], ['missed', rc.missed]].filter((x) =>
		    x[1] > 0).map((x) => x[1] + ' ' + x[0]).join(', ');
		const ran = rc.stopped + (rc.observed_complete || 0);
		let label = state + ' \u00b7 ' + rc.finished + '/' +
		    rc.targeted + ' finished: ' + ran + ' stopped' +
		    (not ? ', ' + not : '');
		let cls = state;
		if (state === 'done' && rc.targeted > 0 && ran === 0) {
			label = 'none ran \u00b7 ' + rc.finished + '/' +
			    rc.targeted + ' finished: ' + not;
			cls = 'none';
		} else if (state === 'done' && not)
			cls = 'partial';
		/* The ranks' traces its agents brought into the trace store. */
		if (rc.collected > 0 || rc.collect_failed > 0)
			label += ' \u00b7 ' + rc.collected + ' traces collected' +
			    (rc.collect_failed > 0 ? ', ' + rc.collect_failed +
			    ' collect failed' : '');
		return { label, cls };
	}

	/* A window's row: its label, its bar on its lane's track (the lane's
	 * mark made by mark()), then its buttons. */
	function windowRow(w, label, bar, mark) {
		const rcw = w.rank_counts || {};
		return el('div', { class: 'w', id: 'window-' + w.id }, label,
		    el('div', { class: 'track' }, bar, mark()),
		    el('span', { class: 'act' }, w.state === 'scheduled' ||
		    w.state === 'running' ? cancelButton(w) : null,
		    (rcw.collected || 0) + (rcw.collect_failed || 0) > 0 ?
		    el('button', { type: 'button', id: 'traces-' + w.id,
		    title: 'the traces of window ' + w.id + ', its ranks ' +
		    'compared', onclick: () => showTraces(w.id) }, 'traces') :
		    null));
	}

	/* A lane's last row: what its mark is, and its two ends. */
	function axisRow(label, lo, hi, mark) {
		return el('div', { class: 'w' }, el('span', { class: 'lbl' },
		    label), el('div', { class: 'track' }, el('span',
		    { class: 'axis', style: 'left:0' }, lo), el('span',
		    { class: 'axis', style: 'right:0' }, hi), mark()),
		    el('span', { class: 'act' }));
	}

	/*
	 * The steps a time window's ranks ran it at (their first step started
	 * at to their last stopped at: a stepping rank starts at the first
	 * step after the start), '' if none is known (no rank started it, or
	 * none steps) and for a window of steps.
	 */
	function ranSteps(w) {
		const r = w.ran;
		if (!w.at || !r || r.start_step === null ||
		    r.start_step === undefined)
			return '';
		return r.stop_step !== null && r.stop_step >= r.start_step ?
		    ' (steps ' + r.start_step + '-' + r.stop_step + ')' :
		    ' (from step ' + r.start_step + ')';
	}

	/* A window's label: which, when, on which ranks, how it is doing. */
	function windowLabel(w, out, ...more) {
		return el('span', { class: 'lbl' }, '#' + w.id + ' ' +
		    windowWhen(w) + ranSteps(w) + ' ' + rankLabel(w.ranks) +
		    selectorLabel(w.selector) + ' \u00b7 ' + out.label, ...more);
	}

	/* The windows of steps as bars on a line of steps, the median step
	 * marked. */
	function stepLane(ws, st) {
		let lo = Math.min(...ws.map((w) => w.start_step));
		let hi = Math.max(...ws.map((w) => w.stop_step));
		if (st.median >= 0) {
			lo = Math.min(lo, st.min >= 0 ? st.min : st.median);
			hi = Math.max(hi, st.max >= 0 ? st.max : st.median);
		}
		const span = Math.max(hi - lo, 1);
		const pct = (x) => (100 * (x - lo) / span).toFixed(2) + '%';
		const mark = () => st.median >= 0 ? el('div', { class: 'now',
		    style: 'left:' + pct(st.median), title: 'median step ' +
		    st.median }) : null;
		const kids = ws.map((w) => {
			const out = windowOutcome(w.state, w.rank_counts || {});
			return windowRow(w, windowLabel(w, out), el('div',
			    { class: 'bar st-' + out.cls, style: 'left:' +
			    pct(w.start_step) + ';width:' + (100 * (w.stop_step -
			    w.start_step + 1) / (span + 1)).toFixed(2) + '%',
			    title: out.label }), mark);
		});
		kids.push(axisRow(st.median >= 0 ? 'median step ' + st.median :
		    '', lo, hi, mark));
		return el('div', { class: 'lane', id: 'lane-steps' }, ...kids);
	}

	/* A time on a line of time: HH:MM:SS in UTC, as the feed says it,
	 * with the day where the line spans more than one. */
	function clockText(ms, days) {
		const t = new Date(ms).toISOString();
		return days ? t.slice(5, 10) + ' ' + t.slice(11, 19) :
		    t.slice(11, 19);
	}

	/*
	 * The time windows as bars on a line of time of their own (they run
	 * at a time on every rank, stepping or not, at no step known before):
	 * from their start for their length, now marked (the coordinator's
	 * clock, as far as its answers' Date tells).
	 */
	function timeLane(ws) {
		const now = coordNow();
		const at = (w) => Date.parse(w.at);
		const lo = Math.min(now, ...ws.map(at));
		const hi = Math.max(now, ...ws.map((w) => at(w) + w.duration_ms));
		const span = Math.max(hi - lo, 1);
		const days = new Date(lo).toISOString().slice(0, 10) !==
		    new Date(hi).toISOString().slice(0, 10);
		const pct = (x) => (100 * (x - lo) / span).toFixed(2) + '%';
		const mark = () => el('div', { class: 'now', style: 'left:' +
		    pct(now), title: 'now, ' + clockText(now, days) + ' UTC' });
		const kids = ws.map((w) => {
			const out = windowOutcome(w.state, w.rank_counts || {});
			const cw = w.clock_warnings || [];
			return windowRow(w, windowLabel(w, out, cw.length ?
			    el('span', { class: 'muted', title: cw.map((c) =>
			    c.warning).join('\n') }, ' \u00b7 clock: ' +
			    cw.length + ' node(s) past the tolerance') : null),
			    el('div', { class: 'bar st-' + out.cls, style: 'left:' +
			    pct(at(w)) + ';width:' + (100 * w.duration_ms /
			    span).toFixed(2) + '%', title: out.label + ' (' +
			    clockText(at(w), days) + ' to ' + clockText(at(w) +
			    w.duration_ms, days) + ' UTC' + (w.ran ? '; its ' +
			    'ranks ran it from ' + w.ran.first_start + ' to ' +
			    (w.ran.last_stop || 'now') : '') + ')' }), mark);
		});
		kids.push(axisRow('now ' + clockText(now, days) + ' UTC',
		    clockText(lo, days), clockText(hi, days), mark));
		return el('div', { class: 'lane', id: 'lane-time' }, ...kids);
	}

	/* The windows: those of steps on a line of steps, time windows on a
	 * line of time, the last WINDOWS_SHOWN of each. */
	function drawTimeline(s) {
		const all = s.windows || [];
		const stepped = all.filter((w) => !w.at).slice(-WINDOWS_SHOWN);
		const timed = all.filter((w) => w.at).sort((a, b) =>
		    Date.parse(a.at) - Date.parse(b.at) || a.id - b.id)
		    .slice(-WINDOWS_SHOWN);
		const box = $('timeline');
		if (stepped.length + timed.length === 0) {
			box.replaceChildren(el('div', { class: 'muted',
			    style: 'padding: 0 8px' }, 'no windows'));
			return;
		}
		box.replaceChildren(stepped.length ? stepLane(stepped,
		    s.steps || {}) : '', timed.length ? timeLane(timed) : '');
	}

	function ms(us) {
		return us === null || us === undefined || us < 0 ? '-' :
		    (us / 1000).toFixed(3);
	}

	/* A trace's link: its presigned URL, an http(s) location, else its
	 * path (in the shared store, as its agent named it). */
	function traceLink(t) {
		const u = t.url || (/^https?:\/\//.test(t.location || '') ?
		    t.location : null);
		if (u)
			return el('a', { href: u, class: 'trace-link',
			    rel: 'noreferrer' }, 'rank-' + t.rank + '.tar.zst');
		return el('code', { class: 'trace-path' }, t.location || '');
	}

	/*
	 * A window's traces (GET .../traces) and its ranks compared (GET
	 * .../compare) under the line of windows.
	 */
	async function showTraces(id) {
		const job = view;
		const base = '/v1/jobs/' + encodeURIComponent(job) + '/windows/' +
		    id;
		const [t, c] = await Promise.all([api(base + '/traces'),
		    api(base + '/compare')]);
		if (!t || !c || view !== job)
			return;
		tracesWin = id;
		const n = t.counts;
		const kids = [el('h4', null, 'Traces of window ' + id + ' ',
		    el('span', { class: 'muted', id: 'traces-note' }, n.collected +
		    ' collected, ' + n.collect_failed + ' failed, ' + n.pending +
		    ' pending' + (t.collect ? '' : ' (the window said "collect": ' +
		    'false)'))), el('table', { id: 'traces-table' },
		    el('thead', null, el('tr', null, el('th', null, 'rank'),
		    el('th', null, 'node'), el('th', null, 'state'), el('th', null,
		    'size'), el('th', null, 'sha256'), el('th', null,
		    'archive'))), el('tbody', null, ...t.traces.map((x) =>
		    el('tr', { 'data-rank': x.rank }, el('td', { class: 'num' },
		    x.rank), el('td', null, x.node || '-'), el('td', null,
		    x.state), el('td', { class: 'num' }, x.size === undefined ?
		    '-' : num(x.size)), el('td', { title: x.sha256 || '' },
		    x.sha256 ? x.sha256.slice(0, 12) : '-'), el('td', null,
		    x.state === 'collected' ? traceLink(x) : x.error || '')))))];
		const st = c.step;
		kids.push(el('h4', null, 'Ranks compared ', el('span',
		    { class: 'muted', id: 'compare-note' }, c.counts.compared +
		    ' ranks with steps' + (st ? ': median step ' +
		    ms(st.median_us) + ' ms, fastest ' + ms(st.min_us) +
		    ', slowest ' + ms(st.max_us) + ' (spread ' +
		    st.spread_pct.toFixed(1) + '%)' : ': no rank\'s trace had ' +
		    'steps'))));
		if (st) {
			/* The straggler: by compute when the steps agree (the
			 * others wait for it in the collectives), else by step. */
			const sg = c.straggler;
			kids.push(el('p', { id: 'compare-straggler', class:
			    sg ? null : 'muted' }, sg ? 'Straggler: ' + sg.says +
			    ' (' + sg.why + ')' : 'No straggler stands out' +
			    (c.synchronous ? ' (step times agree)' : '')));
			const slow = sg ? sg.rank : c.slowest.length ?
			    c.slowest[0].rank : null;
			const stepsOf = (r) => (r.steps || []).map((x) => x.step +
			    ': ' + ms(x.dur_us) + (x.comm_us === undefined ? '' :
			    ' (' + ms(x.comm_us) + ' comm)')).join('  ') +
			    (r.error ? '  (not read whole: ' + r.error + ')' : '');
			const pct = (v) => v === undefined ? '-' : (v >= 0 ? '+' :
			    '') + v.toFixed(1) + '%';
			const opt = (v) => v === null || v === undefined ? '-' :
			    ms(v);
			const line = (r) => el('tr', { 'data-rank': r.rank,
			    class: r.rank === slow ? 'slowest' : null },
			    el('td', { class: 'num' }, r.rank),
			    el('td', { class: 'num' }, ms(r.median_us)),
			    el('td', { class: 'num' }, pct(r.offset_pct)),
			    el('td', { class: 'num', title: r.comm_op || '' },
			    opt(r.comm_us)),
			    el('td', { class: 'num' }, opt(r.compute_us)),
			    el('td', { class: 'num' }, pct(r.compute_offset_pct)),
			    el('td', { title: r.error || '' }, stepsOf(r)));
			kids.push(el('table', { id: 'compare-table' },
			    el('thead', null, el('tr', null,
			    el('th', null, 'rank'),
			    el('th', null, 'median step (ms)'),
			    el('th', null, 'off the median'),
			    el('th', null, 'in collectives (ms)'),
			    el('th', null, 'compute (ms)'),
			    el('th', null, 'off the median compute'),
			    el('th', null, 'steps (ms)'))),
			    el('tbody', null, ...c.ranks.map(line))));
			if (c.operators.length)
				kids.push(el('p', { class: 'muted', id:
				    'compare-ops' }, 'Differ most: ' +
				    c.operators.map((o) => o.name + ' ' +
				    ms(o.max_us) + ' ms (rank ' + o.max_rank +
				    ') against ' + ms(o.min_us) + ' (rank ' +
				    o.min_rank + ')').join('; ')));
		}
		const box = $('traces');
		box.replaceChildren(...kids);
		box.hidden = false;
	}

	/* A live window's cancel button: disabled, saying why, for a viewer. */
	function cancelButton(w) {
		return el('button', { type: 'button', id: 'cancel-' + w.id,
		    'data-window': w.id, disabled: denied !== null ? '' : null,
		    title: denied !== null ? denied : 'cancel window ' + w.id,
		    onclick: () => cancelWindow(w.id) }, 'cancel');
	}

	/* Shows what a write did, or why it was refused. */
	function showResult(text, bad) {
		const p = $('s-result');
		p.textContent = text;
		p.className = bad ? 'error' : 'ok';
		p.hidden = false;
	}

	async function cancelWindow(id) {
		const job = view;
		const r = await write('DELETE', '/v1/jobs/' +
		    encodeURIComponent(job) + '/windows/' + id);
		if (view !== job)
			return;
		if (r.status !== 200)
			showResult('window ' + id + ' not cancelled: ' +
			    refusal(r), true);
		else
			showResult('window ' + id + ' cancelled, generation ' +
			    r.body.generation, false);
		loadSummary(job);
	}

	/*
	 * Whether this token may write, asked once a view: a cancel of
	 * window 0, which the API refuses before anything changes, with 403
	 * and its reason for the viewer's token and 400 (no such id) for the
	 * operator's (or where no token is configured).
	 */
	async function loadRole(job) {
		denied = 'asking the coordinator whether this token may write';
		drawWrite();
		const r = await write('DELETE', '/v1/jobs/' +
		    encodeURIComponent(job) + '/windows/0');
		if (view !== job)
			return;
		if (r.status === 0 || r.status === 307)
			denied = r.body.error;
		else if (r.status === 401 || r.status === 403)
			denied = r.body.error || 'HTTP ' + r.status;
		else
			denied = null;
		drawWrite();
	}

	/* The form and the cancel buttons, enabled as the token allows. */
	function drawWrite() {
		$('schedule-set').disabled = denied !== null;
		$('write-note').textContent = denied !== null ? 'Scheduling ' +
		    'and cancelling are off: ' + denied + '.' : (token ?
		    'With this token you' : 'This coordinator needs no ' +
		    'token: you') + ' may schedule a window and cancel one.';
		for (const b of document.querySelectorAll('#timeline .act ' +
		    'button')) {
			b.disabled = denied !== null;
			b.title = denied !== null ? denied : 'cancel window ' +
			    b.dataset.window;
		}
	}

	/* The form's profiler options, one control a row of the table. */
	function drawOptions() {
		$('s-options').replaceChildren(...OPTIONS.map(([name, type,
		    min, max, def, names]) => {
			let input;
			if (type === 'bool') {
				input = el('input', { type: 'checkbox',
				    id: 'opt-' + name, checked: def ? '' : null });
			} else {
				const vals = [];
				for (let v = min; v <= max; v++)
					vals.push(el('option', { value: v,
					    selected: v === def ? '' : null },
					    v === -1 ? '-1 (unset: the framework\'s)' :
					    v + (names ? ' (' + names[v] + ')' : '')));
				input = el('select', { id: 'opt-' + name }, ...vals);
			}
			input.addEventListener('change', () => {
				input.dataset.set = '1';
			});
			return el('label', {}, input, ' ' + name);
		}));
	}

	/* A length as dynprofctl takes it (10s, 1500ms, 2m, 1h; a bare
	 * number is seconds) in ms; null if it is not one.  Its range is the
	 * API's to judge. */
	function durationMs(text) {
		const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
		if (!m)
			return null;
		const ms = Number(m[1]) * { ms: 1, s: 1000, m: 60000,
		    h: 3600000 }[m[2] || 's'];
		return Number.isSafeInteger(ms) ? ms : null;
	}

	/* The body of POST /v1/jobs/J/windows the form says; null (said why)
	 * if it cannot be made. */
	function scheduleBody() {
		const when = document.querySelector(
		    'input[name="when"]:checked').value;
		const int = (id) => $(id).value === '' ? NaN : Number($(id).value);
		const b = {};
		if (when === 'time') {
			/* The time as typed: the API says what is wrong with
			 * it; the lengths in ms, as dynprofctl's --for. */
			b.at = $('s-at').value.trim();
			const d = durationMs($('s-for').value);
			if (d === null) {
				showResult('give for as 10s, 1500ms or 2m', true);
				return null;
			}
			b.duration_ms = d;
			if ($('s-tol').value.trim() !== '') {
				const t = durationMs($('s-tol').value);
				if (t === null) {
					showResult('give tolerance as 250ms or 1s',
					    true);
					return null;
				}
				b.tolerance_ms = t;
			}
		} else if (when === 'next') {
			b.in_steps = int('s-in');
			b.steps = int('s-steps');
		} else {
			b.start_step = int('s-start');
			b.stop_step = int('s-stop');
		}
		for (const [k, v] of Object.entries(b)) {
			if (when !== 'time' && !Number.isInteger(v)) {
				showResult('give ' + k + ' as a whole number', true);
				return null;
			}
		}
		const ranks = $('s-ranks').value.trim();
		const sel = $('s-select').value.trim();
		if (ranks !== '')
			b.ranks = ranks;
		if (sel !== '')
			b.select = sel;
		const opts = {};
		const fw = $('s-fw').value.trim();
		if (fw !== '') {
			let o;
			try {
				o = JSON.parse(fw);
			} catch (e) {
				o = null;
			}
			if (o === null || typeof o !== 'object' ||
			    Array.isArray(o)) {
				showResult('framework options: not a JSON object',
				    true);
				return null;
			}
			Object.assign(opts, o);
		}
		for (const [name, type] of OPTIONS) {
			const input = $('opt-' + name);
			if (!input.dataset.set)
				continue;
			opts[name] = type === 'bool' ? input.checked :
			    Number(input.value);
		}
		if (Object.keys(opts).length > 0)
			b.options = opts;
		if ($('s-force').checked)
			b.force = true;
		return b;
	}

	async function schedule(e) {
		e.preventDefault();
		const job = view;
		const b = scheduleBody();
		if (b === null)
			return;
		$('s-submit').disabled = true;
		const r = await write('POST', '/v1/jobs/' +
		    encodeURIComponent(job) + '/windows', b);
		$('s-submit').disabled = false;
		if (view !== job)
			return;
		if (r.status !== 201) {
			showResult('not scheduled: ' + refusal(r), true);
			return;
		}
		const w = r.body;
		showResult('window ' + w.id + ' scheduled: ' + (w.at ?
		    windowWhen(w) : 'steps ' + w.start_step + '-' +
		    w.stop_step) + ', ' +
		    rankLabel(w.ranks) + ', generation ' + w.generation +
		    '; options ' + JSON.stringify(w.options) +
		    await beyondRanks(job, b.ranks) +
		    (w.clock_warnings || []).map((c) => '. Warning: ' +
		    c.warning).join(''), false);
		loadSummary(job);
	}

	/*
	 * As dynprofctl trace: a warning when the ranks asked for go beyond
	 * every rank the job has (a typo, or ranks not started yet); '' if
	 * not, or if the job has no rank to compare with.
	 */
	async function beyondRanks(job, ranks) {
		if (!ranks || ranks === 'all')
			return '';
		const hi = Math.max(...ranks.split(/[,-]/).map(Number));
		if (!Number.isInteger(hi) || hi < 1)
			return '';
		const path = '/v1/jobs/' + encodeURIComponent(job) + '/ranks';
		const [above, first] = await Promise.all([api(path +
		    '?limit=1&after=' + (hi - 1)), api(path + '?limit=1')]);
		if (!above || !first || above.ranks.length > 0 ||
		    first.ranks.length === 0)
			return '';
		return '. Warning: rank ' + hi + ' is not one of job ' + job +
		    '\'s ranks yet (none is numbered ' + hi + ' or above)';
	}

	/* The color of a node: its lowest step against the job's median, or
	 * its worst state. */
	function color(n, by, median) {
		if (n.state === 'lost')
			return 'var(--lost)';
		if (n.state === 'left')
			return 'var(--left)';
		if (by === 'state') {
			if (n.failed > 0)
				return 'var(--bad)';
			if (n.profiling > 0)
				return 'var(--prof)';
			if (n.stragglers > 0)
				return 'var(--warn)';
			if (n.done > 0)
				return 'var(--ok)';
			return '#c9d3e3';
		}
		if (by === 'busy') {
			if (!(n.busy_ranks > 0) || !(heat.busy_median_us > 0))
				return NO_BUSY;
			const over = n.busy_max_us / heat.busy_median_us - 1;
			const fb = Math.min(1, Math.max(0, over) * 100 /
			    Math.max(1, heat.busy_percent));
			return 'hsl(' + Math.round(130 - 130 * fb) + ', ' +
			    Math.round(55 + 25 * fb) + '%, ' +
			    Math.round(42 + 6 * fb) + '%)';
		}
		if (n.min_step < 0 || median < 0)
			return '#c9d3e3';
		const lag = Math.max(0, median - n.min_step);
		const lim = heat && heat.lag_steps > 0 ? heat.lag_steps : 50;
		const f = Math.min(1, lag / lim);
		if (n.stragglers > 0)
			return 'hsl(' + Math.round(40 - 40 * f) + ', 80%, 48%)';
		return 'hsl(' + Math.round(130 - 70 * f) + ', 55%, ' +
		    Math.round(42 + 10 * f) + '%)';
	}

	/* A cell's busy time for its title: its longest against the job's
	 * median, or that its ranks give none. */
	function busyTitle(c) {
		if (!(c.busy_ranks > 0))
			return c.ranks > 0 ? ', no busy time' : '';
		return ', busy ' + fixed(c.busy_max_us / 1000, 1) + ' ms' +
		    (heat.busy_median_us > 0 ? ' (' + fixed(c.busy_max_us /
		    heat.busy_median_us, 2) + 'x the median)' : '') +
		    (c.busy_ranks < c.ranks ? ', ' + (c.ranks - c.busy_ranks) +
		    ' of its ranks give none' : '');
	}

	/* Groups the nodes into at most HEAT_CELLS_MAX cells: each the worst
	 * of its nodes. */
	function cells(nodes) {
		const per = Math.ceil(nodes.length / HEAT_CELLS_MAX);
		if (per <= 1)
			return nodes.map((n) => Object.assign({ members: [n] }, n));
		const out = [];
		for (let i = 0; i < nodes.length; i += per) {
			const g = nodes.slice(i, i + per);
			const c = { node: g[0].node + ' \u2026 ' +
			    g[g.length - 1].node, members: g,
			    state: g.every((n) => n.state === 'lost') ? 'lost' :
			    'connected', min_step: Infinity, max_step: -1 };
			for (const k of ['ranks', 'stragglers', 'profiling',
			    'done', 'failed', 'busy_ranks'])
				c[k] = g.reduce((a, n) => a + n[k], 0);
			c.busy_max_us = g.reduce((a, n) =>
			    Math.max(a, n.busy_max_us), 0);
			for (const n of g) {
				if (n.min_step >= 0)
					c.min_step = Math.min(c.min_step, n.min_step);
				c.max_step = Math.max(c.max_step, n.max_step);
			}
			if (c.min_step === Infinity)
				c.min_step = -1;
			out.push(c);
		}
		return out;
	}

	function drawHeat() {
		if (!heat)
			return;
		const by = document.querySelector(
		    'input[name="heat-by"]:checked').value;
		const nodes = heat.nodes;
		const cs = cells(nodes);
		const size = cs.length <= 400 ? 16 : cs.length <= 2000 ? 11 : 8;
		const box = $('heatmap');
		box.style.setProperty('--cell', size + 'px');
		box.replaceChildren(...cs.map((c) => el('div', {
		    class: 'c' + (c.node === selNode ? ' sel' : ''),
		    style: 'background:' + color(c, by, heat.median_step),
		    title: c.node + ': ' + c.ranks + ' ranks, steps ' +
			num(c.min_step) + '-' + num(c.max_step) +
			(c.stragglers ? ', ' + c.stragglers + ' straggling' :
			'') + (by === 'busy' ? busyTitle(c) : '') +
			(c.state === 'lost' ? ', lost' : ''),
		    'data-node': c.node,
		    onclick: () => showNode(c) })));
		const ranks = nodes.reduce((a, n) => a + n.ranks, 0);
		$('heat-note').textContent = '(' + num(nodes.length) +
		    ' nodes, ' + num(ranks) + ' ranks' + (cs.length <
		    nodes.length ? ', ' + Math.ceil(nodes.length / cs.length) +
		    ' nodes a cell' : ', one cell a node') +
		    '; click a cell for its ranks)';
		const leg = by === 'state' ?
		    [['var(--ok)', 'done'], ['var(--prof)', 'profiling'],
		    ['var(--warn)', 'straggling'], ['var(--bad)', 'failed'],
		    ['#c9d3e3', 'attached'], ['var(--lost)', 'lost'],
		    ['var(--left)', 'left']] :
		    by === 'busy' ?
		    [['hsl(130, 55%, 42%)', 'busy time at the median'],
		    ['hsl(65, 68%, 45%)', 'over it'],
		    ['hsl(0, 80%, 48%)', heat.busy_percent + '% over it ' +
		    'or more'], [NO_BUSY, 'no busy time'],
		    ['var(--lost)', 'lost'], ['var(--left)', 'left']] :
		    [['hsl(130, 55%, 42%)', 'at the median'],
		    ['hsl(60, 55%, 52%)', 'behind'],
		    ['hsl(0, 80%, 48%)', 'straggling'],
		    ['var(--lost)', 'lost'], ['var(--left)', 'left']];
		$('legend').replaceChildren(...leg.map(([c, t]) =>
		    el('span', {}, el('i', { style: 'background:' + c }), t)));
		drawGens();
	}

	/* A node's (or cell's) ranks, from the paginated rank listing. */
	async function showNode(c) {
		selNode = c.node;
		const box = $('node-detail');
		box.hidden = false;
		const names = c.members.slice(0, 8).map((n) => n.node);
		const parts = await Promise.all(names.map((n) =>
		    api('/v1/jobs/' + encodeURIComponent(view) +
		    '/ranks?limit=256&node=' + encodeURIComponent(n))));
		const ranks = parts.flatMap((p) => p && p.ranks || []);
		box.replaceChildren(el('h4', {}, c.node + ': ' + c.ranks +
		    ' ranks'), el('table', {}, el('thead', {}, el('tr', {},
		    ...['rank', 'node', 'labels', 'step', 'state', 'window',
		    'output'].map((h) => el('th', {}, h)))), el('tbody', {},
		    ...ranks.map((r) => el('tr', {},
		    el('td', { class: 'num' }, r.rank), el('td', {}, r.node),
		    el('td', {}, Object.entries(r.labels || {}).map(([k, v]) =>
		    k + '=' + v).join(',') || '-'),
		    el('td', { class: 'num' }, num(r.step)),
		    el('td', {}, r.state), el('td', {}, r.window || '-'),
		    el('td', {}, r.output_dir || '-'))))));
		drawHeat();
	}

	/* The job's nodes by the generation they applied; those behind or
	 * lost listed first. */
	function drawGens() {
		const gen = summary ? summary.generation : 0;
		const by = new Map();
		for (const n of heat.nodes)
			by.set(n.applied_generation,
			    (by.get(n.applied_generation) || 0) + 1);
		$('gens').textContent = [...by.entries()].sort((a, b) =>
		    b[0] - a[0]).map(([g, k]) => 'generation ' + g + ': ' +
		    num(k) + (k === 1 ? ' node' : ' nodes')).join('; ') ||
		    'no node serves this job';
		const order = heat.nodes.filter((n) => n.state !== 'connected' ||
		    n.applied_generation < gen).sort((a, b) =>
		    ((b.state === 'lost') - (a.state === 'lost')) ||
		    ((b.state === 'left') - (a.state === 'left')) ||
		    (a.applied_generation - b.applied_generation) ||
		    byName(a.node, b.node));
		$('job-nodes').hidden = order.length === 0;
		if (order.length > NODES_SHOWN)
			$('gens').textContent += ' (the first ' + NODES_SHOWN +
			    ' of ' + order.length + ' behind, lost or left ' +
			    'below)';
		else if (order.length === 0 && heat.nodes.length > 0)
			$('gens').textContent += ': every node is on the ' +
			    'current generation and connected';
		rows('job-nodes', order.slice(0, NODES_SHOWN).map((n) =>
		    el('tr', {}, el('td', {}, n.node), el('td', {}, n.state),
		    el('td', { class: 'num' + (n.applied_generation < gen ?
			' bad' : '') }, n.applied_generation),
		    el('td', { class: 'num' }, n.ranks),
		    el('td', { class: 'num' }, num(n.min_step) + '-' +
			num(n.max_step)))));
	}

	async function loadHeat(job) {
		const d = await api('/v1/jobs/' + encodeURIComponent(job) +
		    '/nodes');
		if (!d || view !== job)
			return;
		const f = d.fields;
		heat = {
			median_step: d.median_step,
			lag_steps: d.lag_steps,
			busy_median_us: d.busy_median_us || 0,
			busy_percent: d.busy_percent || 0,
			nodes: d.nodes.map((row) => Object.fromEntries(
			    f.map((k, i) => [k, row[i]]))).sort((a, b) =>
			    byName(a.node, b.node)),
		};
		drawHeat();
	}

	/* --- The live feed: the job's events as they are committed. --- */

	/* An event of the stream in words: a rank's, or a window's change. */
	function describe(e) {
		if (e.type === 'window')
			return 'window ' + e.window + ' ' + e.change + ' ' +
			    windowWhen(e) + (e.ranks !== undefined ? ', ' +
			    rankLabel(e.ranks) : '') + (e.refused_reason ?
			    ', refused by the nodes: ' + e.refused_reason : '') +
			    ', generation ' + e.generation;
		if (e.type === 'rank') {
			let t = 'rank ' + e.rank + (e.node ? ' on ' + e.node : '') +
			    ' ' + e.kind;
			if (e.window)
				t += ' window ' + e.window;
			/* A trace's collection is after the window: no step. */
			if (e.step >= 0 && !/^collect/.test(e.kind))
				t += ' at step ' + e.step;
			if (e.error)
				t += ': ' + e.error;
			else if (e.output_dir)
				t += ' \u2192 ' + e.output_dir;
			return t;
		}
		return (e.type || 'note') + (e.reason ? ': ' + e.reason : '');
	}

	function feedAdd(e) {
		const t = (e.time || new Date().toISOString()).replace(/^.*T/,
		    '').replace(/\.\d+/, '').replace('Z', '');
		const li = el('li', { class: 'ev ev-' + (e.type || 'note') +
		    (e.kind ? ' ev-' + e.kind : '') },
		    el('span', { class: 't' }, t), describe(e));
		const feed = $('feed');
		feed.prepend(li);
		while (feed.children.length > FEED_MAX)
			feed.lastChild.remove();
	}

	/*
	 * Follows /v1/jobs/J/events (NDJSON), resuming from the last
	 * revision after a break.  since: a revision, null for every event
	 * kept (the first look), or 'summary' for the summary's revision,
	 * read again first (after a 410 or a dropped stream, as the API
	 * tells clients: the events missed are no longer kept, and replaying
	 * what is kept would flood the feed).
	 */
	async function follow(job, since) {
		feedAbort = new AbortController();
		const signal = feedAbort.signal;
		let rev = since;
		$('feed-state').textContent = '(following)';
		try {
			if (rev === 'summary') {
				const s = await loadSummary(job);
				if (!s || s.revision === undefined)
					throw new Error('no summary');
				loadHeat(job);
				rev = s.revision;
			}
			const q = rev !== null ? '&since=' + rev : '';
			const res = await fetch('/v1/jobs/' +
			    encodeURIComponent(job) + '/events?follow=1' + q,
			    { headers: headers(), signal });
			if (res.status === 410) {
				feedAdd({ type: 'note', reason: 'events missed: ' +
				    'the summary read again' });
				rev = 'summary';
				throw new Error('resume');
			}
			if (!res.ok) {
				$('feed-state').textContent = '(event stream: HTTP ' +
				    res.status + ')';
				return;
			}
			const reader = res.body.getReader();
			const dec = new TextDecoder();
			let buf = '';
			for (;;) {
				const { value, done } = await reader.read();
				if (done)
					break;
				buf += dec.decode(value, { stream: true });
				let i;
				while ((i = buf.indexOf('\n')) >= 0) {
					const line = buf.slice(0, i).trim();
					buf = buf.slice(i + 1);
					if (!line)
						continue;
					let e;
					try {
						e = JSON.parse(line);
					} catch (x) {
						continue;
					}
					if (e.rev !== undefined)
						rev = e.rev;
					if (e.type === 'heartbeat')
						continue;
					feedAdd(e);
					if (e.type === 'dropped')
						rev = 'summary';
				}
			}
		} catch (x) {
			if (x.name === 'AbortError')
				return;
		}
		if (view !== job || signal.aborted)
			return;
		$('feed-state').textContent = '(reconnecting)';
		setTimeout(() => {
			if (view === job && !signal.aborted)
				follow(job, rev);
		}, FEED_RETRY_MS);
	}

	/* --- Views. --- */

	function route() {
		stopAll();
		takeToken();
		const p = new URLSearchParams(location.hash.slice(1));
		view = p.get('job');
		/* #heat=step|state|busy: the heat map's view. */
		const hb = document.querySelector('input[name="heat-by"][value="' +
		    (p.get('heat') || '').replace(/[^a-z]/g, '') + '"]');
		if (hb)
			hb.checked = true;
		heat = summary = selNode = tracesWin = null;
		$('traces').hidden = true;
		$('jobs-view').hidden = view !== null;
		$('job-view').hidden = view === null;
		if (view === null) {
			document.title = 'dynprof';
			every(LIST_MS, loadJobs);
			every(LIST_MS * 2, loadNodes);
			return;
		}
		const job = view;
		document.title = job + ' - dynprof';
		$('job-name').textContent = job;
		$('feed').replaceChildren();
		$('node-detail').hidden = true;
		$('s-result').hidden = true;
		loadRole(job);
		every(SUMMARY_MS, () => loadSummary(job));
		every(HEAT_MS, () => loadHeat(job));
		every(LIST_MS * 2, () => loadRules(job));
		follow(job, null);
	}

	function init() {
		$('login').addEventListener('submit', (e) => {
			e.preventDefault();
			sessionStorage.setItem(TOKEN_KEY, $('token').value);
			$('token').value = '';
			showError(null);
			route();
		});
		$('logout').addEventListener('click', () => {
			sessionStorage.removeItem(TOKEN_KEY);
			route();
		});
		for (const r of document.querySelectorAll(
		    'input[name="heat-by"]'))
			r.addEventListener('change', drawHeat);
		$('schedule').addEventListener('submit', schedule);
		drawOptions();
		window.addEventListener('hashchange', route);
		route();
	}

	init();
})();
