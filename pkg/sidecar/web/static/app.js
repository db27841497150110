// schedscope web page: reads the explain API and renders it. No framework,
// no build step; every value from the API goes through textContent.
'use strict';

const PAGE = 50;
let config = { traceURLTemplate: '' };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// fill replaces the children of parent, flattening arrays and dropping nulls.
function fill(parent, ...children) {
  parent.replaceChildren(...children.flat(Infinity).filter(c => c !== null && c !== undefined));
}

// apiRoot is where the API's paths start: the server's root, whether the
// page is served at / or under the API's own path (/apis/schedscope.io/
// v1alpha1/ui/, which kubectl proxy reaches with the user's credentials).
const apiRoot = location.pathname.replace(/apis\/schedscope\.io\/v1alpha1\/ui\/.*$/, '').replace(/[^/]*$/, '');

function token() { return sessionStorage.getItem('schedscope-token') || ''; }

async function api(path) {
  const headers = { Accept: 'application/json' };
  if (token()) headers.Authorization = 'Bearer ' + token();
  const resp = await fetch(apiRoot + path, { headers, credentials: 'same-origin' });
  let body = null;
  try { body = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) {
    const msg = body && body.message ? body.message : resp.statusText;
    const err = new Error(resp.status + ' ' + msg);
    err.status = resp.status;
    throw err;
  }
  return body;
}

function fmtDuration(ns) {
  if (!ns) return '0';
  if (ns < 1e3) return ns + 'ns';
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + 'µs';
  if (ns < 1e9) return (ns / 1e6).toFixed(1) + 'ms';
  return (ns / 1e9).toFixed(2) + 's';
}

function fmtTime(t) {
  if (!t || t.startsWith('0001')) return '-';
  return new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// podHref is a pod's page; cluster, when set, is the pod's cluster among
// several in one store.
function podHref(pod, attempt, cluster) {
  const q = new URLSearchParams();
  if (attempt) q.set('attempt', attempt);
  if (cluster) q.set('cluster', cluster);
  const qs = q.toString();
  return '#/pods/' + encodeURIComponent(pod.namespace) + '/' + encodeURIComponent(pod.name) + (qs ? '?' + qs : '');
}

function podLink(pod, attempt, cluster) {
  return el('a', { href: podHref(pod, attempt, cluster), text: pod.namespace + '/' + pod.name });
}

function reasonsText(reasons) {
  return (reasons || []).map(r => r.plugin + ' (' + r.nodes + ')').join(', ');
}

// podColumns are the pod tables' columns with the value each sorts by.
// Cluster shows only when the store holds named clusters.
const podColumns = [
  ['Cluster', p => p.cluster || ''],
  ['Pod', p => p.pod.namespace + '/' + p.pod.name],
  ['Profile', p => p.profile],
  ['Attempts', p => p.latest.lastAttempt || p.latest.attempt],
  ['Result', p => p.latest.result],
  ['Last attempt', p => p.latest.lastFinished || p.latest.finished],
  ['Rejected by', p => reasonsText(p.latest.reasons)],
  ['Message', p => p.latest.message || ''],
];

// sorted returns items ordered by the state's sort column (`sort=Pod` or
// `sort=-Pod` for descending), or as given.
function sorted(items, state) {
  if (!state.sort) return items;
  const desc = state.sort.startsWith('-');
  const col = podColumns.find(([h]) => h === state.sort.replace(/^-/, ''));
  if (!col) return items;
  const key = col[1];
  return items.slice().sort((a, b) => {
    const x = key(a), y = key(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return desc ? -c : c;
  });
}

function podTable(items, empty, state) {
  if (!items.length) return el('p', { class: 'muted', text: empty });
  items = sorted(items, state || {});
  const header = ([h]) => {
    const cur = (state || {}).sort || '';
    const next = cur === h ? '-' + h : h;
    const mark = cur === h ? ' ▲' : cur === '-' + h ? ' ▼' : '';
    return el('th', {}, state ? el('a', { class: 'sort', href: homeHref({ ...state, sort: next }), text: h + mark }) : h);
  };
  const clusters = items.some(p => p.cluster);
  return el('table', { class: 'pods' },
    el('thead', {}, el('tr', {}, podColumns.filter(([h]) => clusters || h !== 'Cluster').map(header))),
    el('tbody', {}, items.map(p => el('tr', { 'data-pod': p.pod.namespace + '/' + p.pod.name, ...(p.cluster ? { 'data-cluster': p.cluster } : {}) },
      clusters ? el('td', { class: 'cluster', text: p.cluster || '-' }) : null,
      el('td', {}, podLink(p.pod, 0, p.cluster)),
      el('td', { text: p.profile }),
      el('td', { class: 'num', text: p.latest.lastAttempt || p.latest.attempt }),
      el('td', { class: 'result-' + p.latest.result, text: p.latest.result }),
      el('td', { text: fmtTime(p.latest.lastFinished || p.latest.finished) }),
      el('td', { text: reasonsText(p.latest.reasons) || '-' }),
      el('td', { text: p.latest.message || (p.latest.selectedNode ? 'on ' + p.latest.selectedNode : '') })))));
}

// timeRanges are the home page's time filters: the API's since, and what
// the page calls it.
const timeRanges = [['15m', 'last 15 minutes'], ['1h', 'last hour'], ['6h', 'last 6 hours'], ['24h', 'last day'], ['168h', 'last 7 days']];

function rangeLabel(since) {
  return (timeRanges.find(([d]) => d === since) || timeRanges[1])[1];
}

function rejectionTable(list, label, since) {
  if (!list.items.length) return el('p', { class: 'muted', text: 'No rejections in the ' + rangeLabel(since) + '.' });
  return el('table', { class: 'rejections', 'data-by': list.by },
    el('thead', {}, el('tr', {}, [label, 'Attempts', 'Node rejections'].map(h => el('th', { text: h })))),
    el('tbody', {}, list.items.map(r => el('tr', {},
      el('td', { text: r.key + (r.plugins ? ' (' + Object.entries(r.plugins).map(([p, n]) => p + ' ' + n).join(', ') + ')' : '') }),
      el('td', { class: 'num', text: r.attempts }),
      el('td', { class: 'num', text: r.nodes })))));
}

// orNote returns the answer of path, or, when the API refuses or fails, a
// paragraph saying why.
async function orNote(path) {
  try {
    return await api(path);
  } catch (err) {
    return { note: el('p', { class: 'muted refused', text: err.message }) };
  }
}

// homeHref is the home page's address for a state.
function homeHref(state) {
  const q = new URLSearchParams();
  if (state.ns) q.set('ns', state.ns);
  if (state.cluster) q.set('cluster', state.cluster);
  if (state.q) q.set('q', state.q);
  if (state.result) q.set('result', state.result);
  if (state.profile) q.set('profile', state.profile);
  if (state.since) q.set('since', state.since);
  if (state.sort) q.set('sort', state.sort);
  if (state.refresh) q.set('refresh', state.refresh);
  const qs = q.toString();
  return '#/' + (qs ? '?' + qs : '');
}

// choice is a select of values, '' standing for any (labelled anyText).
function choice(name, values, current, anyText, label) {
  return el('select', { name }, ['', ...values].map(v =>
    el('option', { value: v, text: v ? (label ? label(v) : v) : anyText, ...(v === (current || '') ? { selected: 'selected' } : {}) })));
}

function namespaceForm(state, profiles) {
  const ns = el('input', { name: 'ns', placeholder: 'all namespaces', value: state.ns || '' });
  const cluster = el('input', { name: 'cluster', placeholder: 'all clusters', value: state.cluster || '' });
  const search = el('input', { name: 'q', class: 'search', placeholder: 'pod name or UID prefix', value: state.q || '' });
  const result = choice('result', ['scheduled', 'unschedulable', 'error'], state.result, 'any result');
  const profile = choice('profile', profiles, state.profile, 'any profile');
  const since = choice('since', timeRanges.map(([d]) => d), state.since, 'any time', rangeLabel);
  const refresh = el('input', { type: 'checkbox', name: 'refresh', ...(state.refresh ? { checked: 'checked' } : {}) });
  return el('form', { class: 'namespace', onsubmit: ev => {
    ev.preventDefault();
    location.hash = homeHref({ ns: ns.value, cluster: cluster.value, q: search.value, result: result.value, profile: profile.value, since: since.value,
      sort: state.sort, refresh: refresh.checked ? '10s' : '' });
  } }, el('label', {}, 'Namespace ', ns), el('label', {}, 'Cluster ', cluster), el('label', {}, 'Search ', search), el('label', {}, 'Result ', result),
  el('label', {}, 'Profile ', profile), el('label', {}, 'Attempted in ', since),
  el('label', {}, refresh, ' refresh every 10 s'), el('button', { type: 'submit', text: 'Show' }));
}

// sinceMillis parses a time range's duration (15m, 1h, 168h).
function sinceMillis(since) {
  const m = /^(\d+)([mh])$/.exec(since);
  return m ? Number(m[1]) * (m[2] === 'h' ? 3600e3 : 60e3) : 0;
}

// matches reports whether a pod's latest attempt passes the search (a part
// of the pod's name, or a prefix of its UID), and the result, profile and
// time filters (its last attempt finished within the range).
function matches(p, state) {
  const q = (state.q || '').toLowerCase();
  if (q && !p.pod.name.toLowerCase().includes(q) && !p.pod.uid.toLowerCase().startsWith(q)) return false;
  if (state.profile && p.profile !== state.profile) return false;
  if (state.since && Date.parse(p.latest.lastFinished || p.latest.finished) < Date.now() - sinceMillis(state.since)) return false;
  return !state.result || p.latest.result === state.result;
}

// filtering reports whether any of the home page's filters is set.
function filtering(state) {
  return Boolean(state.q || state.result || state.profile || state.since);
}

async function renderHome(main, state) {
  const base = 'apis/schedscope.io/v1alpha1/' + (state.ns ? 'namespaces/' + encodeURIComponent(state.ns) + '/' : '');
  const c = state.cluster ? '&cluster=' + encodeURIComponent(state.cluster) : '';
  const since = state.since || '1h';
  const [pending, recent, byPlugin, byNode] = await Promise.all([
    orNote(base + 'pending?limit=200' + c), orNote(base + 'pods?limit=' + (filtering(state) ? 1000 : 100) + c),
    orNote(base + 'rejections?by=plugin&since=' + since + '&limit=10' + c), orNote(base + 'rejections?by=node&since=' + since + '&limit=10' + c)]);
  const profiles = [...new Set([pending, recent].flatMap(l => (l.items || []).map(p => p.profile)).concat(state.profile ? [state.profile] : []))].sort();
  fill(main,
    namespaceForm(state, profiles),
    el('h2', { text: 'Pending pods' + (state.ns ? ' in ' + state.ns : '') }),
    pending.note || podTable(pending.items.filter(p => matches(p, state)), filtering(state) ? 'No pending pod matches.' : 'No pending pods.', state),
    el('h2', { text: 'Recent pods' }),
    recent.note || podTable(recent.items.filter(p => matches(p, state)), filtering(state) ? 'No pod matches.' : 'No attempts recorded yet.', state),
    el('div', { class: 'columns' },
      el('section', {}, el('h2', { text: 'Rejecting plugins, ' + rangeLabel(since) }), byPlugin.note || rejectionTable(byPlugin, 'Plugin', since)),
      el('section', {}, el('h2', { text: 'Most rejected nodes, ' + rangeLabel(since) }), byNode.note || rejectionTable(byNode, 'Node', since))));
}

function traceLink(traceID) {
  if (!traceID) return el('span', { class: 'muted', text: 'not traced' });
  if (!config.traceURLTemplate) return el('code', { text: traceID });
  return el('a', { href: config.traceURLTemplate.replaceAll('{traceID}', encodeURIComponent(traceID)), target: '_blank', rel: 'noopener', class: 'trace', text: traceID });
}

// marginText says why the chosen node beat the runner-up, in the words of
// kubectl schedscope explain (v1alpha1.Margin's String).
function marginText(m) {
  let text = m.by > 0 ? m.node + ' beat ' + m.runnerUp + ' by ' + m.by
    : m.by === 0 ? m.node + ' tied with ' + m.runnerUp + ' (the scheduler picked at random)'
      : m.node + ' was chosen though ' + m.runnerUp + ' scored ' + (-m.by) + ' more';
  (m.plugins || []).forEach((p, i) => { text += (i ? ', ' : ': ') + p.plugin + ' ' + (p.by > 0 ? '+' : '') + p.by; });
  return text;
}

function summary(e) {
  const rows = [
    ['Pod', e.pod.namespace + '/' + e.pod.name + ' (uid ' + e.pod.uid + ')'],
    ['Attempt', e.attempt + ' (profile ' + e.profile + ')'],
    ['Result', el('span', { class: 'result-' + e.result, text: e.result })],
    ['Chosen node', e.selectedNode || '-'],
  ];
  if (e.margin) rows.push(['Margin', marginText(e.margin)]);
  if (e.message) rows.push(['Message', e.message + (e.failedPoint ? ' (at ' + e.failedPoint + ')' : '')]);
  if (e.nominatedNode) rows.push(['Nominated node', e.nominatedNode]);
  rows.push(['Nodes', e.nodes.total + ' total, ' + e.nodes.evaluated + ' evaluated, ' + e.nodes.feasible + ' feasible']);
  rows.push(['Timing', 'queued ' + fmtTime(e.timing.queued) + ', waited ' + fmtDuration(e.timing.queueWait) +
    ', scheduling cycle ' + fmtDuration(e.timing.schedulingCycle) + ', binding cycle ' + fmtDuration(e.timing.bindingCycle)]);
  rows.push(['Trace', traceLink(e.traceID)]);
  for (const d of e.details || []) rows.push(['Detail from ' + d.plugin, d.detail]);
  if (e.detailsCut) rows.push(['Details not kept', String(e.detailsCut)]);
  return el('dl', { class: 'summary' }, rows.map(([k, v]) => [el('dt', { text: k }), el('dd', {}, v)]));
}

function timeline(attempts, current, pod) {
  const items = attempts.slice().reverse();
  return el('ol', { class: 'timeline' }, items.map(a => el('li', { class: a.attempt === current ? 'current' : '' },
    el('a', { href: podHref(pod, a.attempt, a.cluster), text: '#' + a.attempt + (a.repeats ? '–' + a.lastAttempt : '') }),
    ' ', el('span', { class: 'result-' + a.result, text: a.result + (a.repeats ? ' ×' + (a.repeats + 1) : '') }),
    ' ', el('span', { class: 'muted', text: fmtTime(a.finished) + (a.repeats ? ' to ' + fmtTime(a.lastFinished) : '') }),
    a.selectedNode ? ' → ' + a.selectedNode : (a.reasons && a.reasons.length ? ' — ' + reasonsText(a.reasons) : ''))));
}

function points(e) {
  const ps = e.points || [];
  if (!ps.length) return el('p', { class: 'muted', text: 'No extension point timings recorded.' });
  const max = Math.max(...ps.map(p => p.duration), 1);
  return el('div', { class: 'points' }, ps.map(p => [
    el('span', { text: p.point + (p.code && p.code !== 'Success' ? ' (' + p.code + ')' : '') }),
    el('div', { class: 'bar', 'data-width': Math.max(1, Math.round(100 * p.duration / max)) }),
    el('span', { class: 'num', text: fmtDuration(p.duration) })]));
}

function groupLabel(g) {
  if (g.verdict === 'rejected') return 'rejected by ' + g.plugin;
  if (g.verdict === 'not-evaluated') return 'not evaluated: ' + g.notEvaluatedReason;
  return g.verdict;
}

function groupsTable(e, state) {
  return el('table', { class: 'groups' },
    el('thead', {}, el('tr', {}, ['Verdict', 'Reasons', 'Nodes', ''].map(h => el('th', { text: h })))),
    el('tbody', {}, e.groups.map(g => el('tr', { class: state.group === g.index ? 'selected' : '' },
      el('td', { text: groupLabel(g) + (g.hasChosen ? ' (holds the chosen node)' : '') }),
      el('td', { text: (g.reasons || []).join('; ') }),
      el('td', { class: 'num', text: g.nodes }),
      el('td', {}, e.nodesHidden ? null : el('a', { href: hrefFor(state, { group: g.index, offset: 0 }), text: 'show' }))))));
}

function hrefFor(state, change) {
  const s = Object.assign({}, state, change);
  const q = new URLSearchParams();
  if (s.attempt) q.set('attempt', s.attempt);
  if (s.group !== undefined && s.group !== null && s.group >= 0) q.set('group', s.group);
  if (s.offset) q.set('offset', s.offset);
  if (s.cluster) q.set('cluster', s.cluster);
  if (s.shadow) q.set('shadow', s.shadow);
  return '#/pods/' + encodeURIComponent(s.ns) + '/' + encodeURIComponent(s.name) + '?' + q.toString();
}

function matrix(e, state) {
  const head = ['Node', 'Verdict', 'Rejected by'].map(h => el('th', { text: h }));
  for (const p of e.filterPlugins) head.push(el('th', { class: 'plugin filter', title: 'Filter', text: p }));
  for (const p of e.scorePlugins) head.push(el('th', { class: 'plugin score num', title: 'Score, weight ' + p.weight, text: p.name }));
  head.push(el('th', { class: 'num', text: 'Total' }));
  const rows = e.rows.map(r => {
    const cls = r.chosen ? 'chosen' : r.verdict;
    const details = (r.details || []).map(d => d.plugin + ': ' + d.detail).join('; ');
    const cells = [
      el('td', { class: 'node', text: r.node }),
      el('td', { text: r.chosen ? 'chosen' : (r.verdict === 'passed' ? 'feasible' : r.verdict) }),
      el('td', { class: 'rejected-by', title: (r.reasons || []).join('; ') || r.notEvaluatedReason || '',
        text: r.plugin ? r.plugin + ': ' + (r.reasons || []).join('; ') : (r.notEvaluatedReason || '') },
        details ? el('div', { class: 'plugin-detail', text: details }) : null),
    ];
    for (const p of e.filterPlugins) {
      if (r.plugin === p) cells.push(el('td', { class: 'cell-rejected', title: (r.reasons || []).join('; '), text: '✗' }));
      else if (r.verdict === 'passed') cells.push(el('td', { class: 'cell-passed', text: '✓' }));
      else cells.push(el('td', { class: 'muted', text: '·' }));
    }
    for (let i = 0; i < e.scorePlugins.length; i++) {
      cells.push(el('td', { class: 'num', text: r.scores && i < r.scores.length ? r.scores[i] : '' }));
    }
    cells.push(el('td', { class: 'num', text: r.total !== undefined ? r.total : '' }));
    return el('tr', { class: cls, 'data-node': r.node, 'data-verdict': r.verdict }, cells);
  });
  const from = e.totalRows ? e.offset + 1 : 0;
  const to = e.offset + e.rows.length;
  const pager = el('div', { class: 'pager' },
    el('span', { text: 'Nodes ' + from + '–' + to + ' of ' + e.totalRows + (state.group >= 0 ? ' in the selected group' : '') }),
    e.offset > 0 ? el('a', { href: hrefFor(state, { offset: Math.max(0, e.offset - PAGE) }), text: '← previous' }) : null,
    to < e.totalRows ? el('a', { href: hrefFor(state, { offset: to }), text: 'next →' }) : null,
    state.group >= 0 ? el('a', { href: hrefFor(state, { group: -1, offset: 0 }), text: 'all nodes' }) : null);
  const groupsRow = el('tr', { class: 'column-groups' },
    el('th', { colspan: 3 }),
    e.filterPlugins.length ? el('th', { colspan: e.filterPlugins.length, text: 'Filter (✗ rejected the node)' }) : null,
    e.scorePlugins.length ? el('th', { colspan: e.scorePlugins.length + 1, class: 'num', text: 'Score (weighted)' }) : el('th'));
  return [pager, el('table', { class: 'matrix' }, el('thead', {}, groupsRow, el('tr', {}, head)), el('tbody', {}, rows)), pager.cloneNode(true)];
}

function whyForm(state) {
  const input = el('input', { name: 'node', placeholder: 'node name', required: 'required' });
  const out = el('div', { class: 'why-out' });
  const form = el('form', { class: 'why', onsubmit: async ev => {
    ev.preventDefault();
    const q = new URLSearchParams({ node: input.value });
    if (state.cluster) q.set('cluster', state.cluster);
    if (state.attempt) q.set('attempt', state.attempt);
    if (state.shadow) q.set('shadow', state.shadow);
    try {
      const ans = await api(podBase(state) + '/explain?' + q.toString());
      fill(out, el('p', { class: 'why-answer', text: ans.why }));
    } catch (err) {
      fill(out, el('p', { class: 'error', text: err.message }));
    }
  } }, el('label', {}, 'Why not node ', input), el('button', { type: 'submit', text: 'Explain' }));
  return [form, out];
}

// hintsList says what would make an unschedulable pod fit, each hint
// after the plugins it answers.
function hintsList(e) {
  if (!e.hints || e.hints.length === 0) return [];
  return [el('h2', { text: 'What would make it fit' }),
    el('ul', { class: 'hints' }, e.hints.map(h => el('li', { class: 'hint hint-' + h.kind },
      el('span', { class: 'hint-plugins', text: h.plugins.join(', ') }), ' ', el('span', { class: 'hint-message', text: h.message }))))];
}

// ordinal writes n as 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
function ordinal(n) {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : { 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] || 'th';
  return n + suffix;
}

// shadowOutcomes say a shadow run's outcome in the words of kubectl
// schedscope explain.
const shadowOutcomes = {
  sameNode: 'same node',
  otherNode: 'another node',
  onlyLiveFits: 'no node, where the live profile found one',
  onlyShadowFits: 'a node, where the live profile found none',
  neither: 'no node, as the live profile',
};

// postFilterText says a PostFilter plugin's answer in a shadow's run, in
// the words of kubectl schedscope explain.
function postFilterText(pf) {
  const victims = (pf.victims || []).length;
  if (!pf.dryRun) return 'not asked' + (pf.message ? ': ' + pf.message : '');
  if (pf.code === 'Success' && victims) return 'would preempt ' + victims + (victims === 1 ? ' pod' : ' pods') + (pf.nominatedNode ? ' on node ' + pf.nominatedNode : '');
  if (pf.code === 'Success') return 'preemption would help' + (pf.nominatedNode ? ' on node ' + pf.nominatedNode : '');
  return 'preemption would not help' + (pf.message ? ': ' + pf.message : '');
}

// shadowsTable shows what each shadow profile would have done in the
// attempt, each with a link that explains the shadow's own run. Node
// names, ranks and scores show only when the answer has them.
function shadowsTable(e, state) {
  if (!e.shadows || e.shadows.length === 0) return [];
  return [el('h2', { text: 'Shadows' }),
    el('table', { class: 'shadows' },
      el('thead', {}, el('tr', {}, ['Shadow', 'Outcome', "Shadow's node", 'Live node under the shadow', 'Behind the difference', 'PostFilter', ''].map(h => el('th', { text: h })))),
      el('tbody', {}, e.shadows.map(r => el('tr', { class: 'shadow-' + r.outcome, 'data-shadow': r.shadow },
        el('td', { text: r.shadow }),
        el('td', {}, r.outcome === 'notCompared' ? 'not compared: ' + r.notComparedReason : shadowOutcomes[r.outcome] || r.outcome,
          r.message ? el('div', { class: 'plugin-detail', text: r.message }) : null),
        el('td', { text: (r.selectedNode || '-') + (r.shadowNodeLiveScore !== undefined ? ' (live profile\'s score ' + r.shadowNodeLiveScore + ')' : '') }),
        el('td', { text: r.liveNodeRank ? ordinal(r.liveNodeRank) + (r.liveNodeScore !== undefined ? ', score ' + r.liveNodeScore : '') : '-' }),
        el('td', { text: (r.plugins || []).join(', ') || '-' }),
        el('td', {}, (r.postFilter || []).length ? el('ul', { class: 'postfilter' }, r.postFilter.map(pf => el('li', { text: pf.plugin + ': ' + postFilterText(pf) }))) : '-'),
        el('td', {}, el('a', { class: 'shadow-run', href: hrefFor(state, { shadow: r.shadow, group: -1, offset: 0 }), text: 'explain its run' }))))))];
}

function podBase(state) {
  return 'apis/schedscope.io/v1alpha1/namespaces/' + encodeURIComponent(state.ns) + '/pods/' + encodeURIComponent(state.name);
}

async function renderPod(main, state) {
  const q = new URLSearchParams({ limit: PAGE, offset: state.offset || 0 });
  if (state.attempt) q.set('attempt', state.attempt);
  if (state.group >= 0) q.set('group', state.group);
  if (state.cluster) q.set('cluster', state.cluster);
  if (state.shadow) q.set('shadow', state.shadow);
  const c = state.cluster ? '&cluster=' + encodeURIComponent(state.cluster) : '';
  const [attempts, e] = await Promise.all([
    api(podBase(state) + '/attempts?limit=100' + c),
    api(podBase(state) + '/explain?' + q.toString())]);
  fill(main,
    el('p', {}, el('a', { href: '#/', text: '← all pods' }),
      state.shadow ? [' ', el('a', { class: 'live-attempt', href: hrefFor(state, { shadow: '', group: -1, offset: 0 }), text: '← the live attempt' })] : null),
    el('h2', { text: (state.shadow ? 'Shadow ' + state.shadow + "'s run of attempt " : 'Attempt ') + e.attempt + ' of ' + e.pod.namespace + '/' + e.pod.name +
      (e.cluster ? ' in cluster ' + e.cluster : '') }),
    summary(e),
    ...hintsList(e),
    ...shadowsTable(e, state),
    el('h2', { text: 'Attempts' }), timeline(attempts.items, e.attempt, e.pod),
    el('h2', { text: 'Extension points' }), points(e),
    el('h2', { text: 'Nodes by verdict' }), groupsTable(e, state),
    ...(e.nodesHidden
      ? [el('p', { class: 'muted nodes-hidden', text: 'Node names, per-node verdicts and scores are hidden: you may not list nodes.' })]
      : [whyForm(state),
        el('h2', { text: 'Nodes × plugins' }),
        e.scoringSkipped ? el('p', { class: 'muted', text: 'Scoring skipped: ' + e.scoringSkipped }) : null,
        matrix(e, state)]));
  for (const bar of main.querySelectorAll('.bar')) bar.style.width = bar.dataset.width + '%';
}

function parseRoute() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'pods' && parts.length === 3) {
    const q = new URLSearchParams(query || '');
    return { view: 'pod', ns: parts[1], name: parts[2], cluster: q.get('cluster') || '', attempt: Number(q.get('attempt')) || 0,
      group: q.has('group') ? Number(q.get('group')) : -1, offset: Number(q.get('offset')) || 0, shadow: q.get('shadow') || '' };
  }
  const q = new URLSearchParams(query || '');
  return { view: 'home', ns: q.get('ns') || '', cluster: q.get('cluster') || '', q: q.get('q') || '', result: q.get('result') || '',
    profile: q.get('profile') || '', since: timeRanges.some(([d]) => d === q.get('since')) ? q.get('since') : '',
    sort: q.get('sort') || '', refresh: q.get('refresh') || '' };
}

// refreshTimer re-renders the home page while its refresh box is checked.
let refreshTimer = null;

async function render() {
  const main = document.getElementById('main');
  const route = parseRoute();
  clearTimeout(refreshTimer);
  if (route.view === 'home' && route.refresh) refreshTimer = setTimeout(render, 10000);
  document.body.dataset.ready = 'loading';
  main.setAttribute('aria-busy', 'true');
  try {
    if (route.view === 'pod') await renderPod(main, route);
    else await renderHome(main, route);
    document.body.dataset.ready = 'true';
    main.removeAttribute('aria-busy');
  } catch (err) {
    main.removeAttribute('aria-busy');
    fill(main, el('p', { class: 'error', text: err.message }),
      el('p', { class: 'muted', text: 'The API needs credentials Kubernetes accepts: paste a bearer token above, or present a client certificate.' }));
    document.body.dataset.ready = 'error';
  }
}

async function start() {
  const input = document.getElementById('token');
  input.value = token();
  input.addEventListener('change', () => { sessionStorage.setItem('schedscope-token', input.value); render(); });
  try { config = await (await fetch('config.json')).json(); } catch (e) { /* defaults */ }
  window.addEventListener('hashchange', render);
  await render();
}

start();
