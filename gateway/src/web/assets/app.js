// The approval page of fluxgit-gateway: the queue, one card at a time, and a person's decisions.
// Plain DOM code; every text from the gateway is set with textContent (never parsed as HTML). The page polls the
// queue every second and reloads the selected card when its proposal changes.
'use strict';

const POLL_MS = 1000;
const csrf = document.querySelector('meta[name="fluxgit-csrf"]').content;
const state = {
  queue: [],
  signature: null,
  selected: null,
  card: null,
  cardSignature: '',
  offsetMs: 0,
  restoreArmed: false,
  message: null,
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function call(method, path, body) {
  const options = { method, headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    options.headers['content-type'] = 'application/json';
    options.headers['x-fluxgit-csrf'] = csrf;
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  return { ok: response.ok, status: response.status, data };
}

function itemSignature(item) {
  return [item.id, item.status, item.updatedMs, item.restored, item.needsReconciliation].join(':');
}

function nowMs() {
  return Date.now() + state.offsetMs;
}

function countdown(expiresAtMs) {
  const left = Math.max(0, Math.floor((expiresAtMs - nowMs()) / 1000));
  return `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
}

function time(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

let polling = false;

async function poll() {
  if (polling) return;
  polling = true;
  try {
    await pollOnce();
  } finally {
    polling = false;
  }
}

async function pollOnce() {
  let answer;
  try {
    answer = await call('GET', 'api/queue');
  } catch (_) {
    answer = { ok: false };
  }
  const live = document.getElementById('live');
  if (!answer.ok) {
    live.textContent = 'offline';
    live.className = 'live off';
    return;
  }
  live.textContent = 'live';
  live.className = 'live on';
  const queue = answer.data;
  state.offsetMs = queue.nowMs - Date.now();
  document.getElementById('pending-count').textContent =
    queue.pending === 1 ? '1 waiting' : `${queue.pending} waiting`;
  const signature = queue.proposals.map(itemSignature).join('|');
  state.queue = queue.proposals;
  if (signature !== state.signature) {
    state.signature = signature;
    if (!state.selected && state.queue.length > 0) state.selected = state.queue[0].id;
    renderQueue();
  }
  const selected = state.queue.find((item) => item.id === state.selected);
  if (selected && itemSignature(selected) !== state.cardSignature) {
    await loadCard(selected.id);
  }
}

function renderQueue() {
  const nav = document.getElementById('queue');
  nav.replaceChildren();
  if (state.queue.length === 0) {
    nav.append(el('p', { class: 'empty', text: 'Nothing is waiting. Proposals appear here as agents send them.' }));
    return;
  }
  let heading = null;
  const list = el('ol', { class: 'queue-list' });
  for (const item of state.queue) {
    const group = item.status === 'pending' ? 'Waiting for you' : item.status === 'approved' || item.status === 'executing' || item.needsReconciliation ? 'In progress' : 'Recent outcomes';
    if (group !== heading) {
      heading = group;
      list.append(el('li', { class: 'group', text: group }));
    }
    const selected = item.id === state.selected;
    const entry = el(
      'li',
      { class: `item status-${item.status}${selected ? ' selected' : ''}`, 'data-id': item.id, 'data-status': item.status },
      el(
        'button',
        { type: 'button', 'aria-current': selected ? 'true' : null, onclick: () => select(item.id) },
        el('span', { class: 'line1' },
          el('span', { class: 'op', text: item.op }),
          el('span', { class: `risk risk-${item.risk}`, text: item.risk }),
          el('span', { class: `badge status-${item.status}`, text: item.needsReconciliation ? 'reconcile' : item.status }),
          item.status === 'pending' ? el('span', { class: 'expiry', 'data-expires': item.expiresAtMs, text: countdown(item.expiresAtMs) }) : null),
        el('span', { class: 'line2', text: item.reason }),
        el('span', { class: 'line3', text: `${item.agent} · ${item.repo} · ${time(item.createdMs)}` }),
      ),
    );
    list.append(entry);
  }
  nav.append(list);
}

async function select(id) {
  if (state.selected !== id) {
    state.selected = id;
    state.restoreArmed = false;
    state.message = null;
  }
  renderQueue();
  await loadCard(id);
  const item = document.querySelector(`#queue li[data-id="${CSS.escape(id)}"]`);
  if (item) item.scrollIntoView({ block: 'nearest' });
}

async function loadCard(id) {
  // Only the newest request renders: an older answer arriving late would show a stale card.
  const request = (state.cardRequests = (state.cardRequests || 0) + 1);
  const answer = await call('GET', `api/proposals/${encodeURIComponent(id)}`);
  if (!answer.ok || id !== state.selected || request !== state.cardRequests) return;
  const keep = state.card && state.card.id === id ? document.getElementById('confirm-input')?.value ?? '' : '';
  const keepReason = state.card && state.card.id === id ? document.getElementById('reject-reason')?.value ?? '' : '';
  // A live update must never take the keyboard from a person typing a reason or a confirmation: the field that had
  // the focus gets it back, with its caret, in the new card.
  const active = document.activeElement;
  const typing = state.card && state.card.id === id && active instanceof HTMLInputElement
    && (active.id === 'reject-reason' || active.id === 'confirm-input') ? { id: active.id, caret: active.selectionStart } : null;
  state.card = answer.data;
  state.cardSignature = itemSignature(answer.data);
  renderCard(keep, keepReason);
  const again = typing && document.getElementById(typing.id);
  if (again instanceof HTMLInputElement) {
    again.focus();
    again.setSelectionRange(typing.caret, typing.caret);
  }
}

function field(label, ...value) {
  return el('div', { class: 'field' }, el('span', { class: 'label', text: label }), el('span', { class: 'value' }, ...value));
}

function renderSection(section) {
  if (section.kind === 'confirmation') return null;
  const box = el('section', { class: `sec kind-${section.kind}${section.conflicts ? ' conflicts' : ''}`, 'data-kind': section.kind });
  box.append(el('h3', { text: section.title }));
  if (section.text) box.append(el('p', { class: 'sec-text', text: section.text }));
  if (section.kind === 'diff') {
    const table = el('table', { class: 'diff' });
    for (const line of section.lines) {
      table.append(el('tr', { class: `d-${line.kind}` },
        el('td', { class: 'ln', text: line.old ?? '' }),
        el('td', { class: 'ln', text: line.new ?? '' }),
        el('td', { class: 'code', text: line.text })));
    }
    box.append(el('div', { class: 'scroll' }, table));
  } else if (section.lines.length > 0) {
    box.append(el('pre', { class: 'lines', text: section.lines.join('\n') }));
  }
  return box;
}

function renderCard(keptConfirmation, keptReason) {
  const card = state.card;
  const root = document.getElementById('card');
  root.replaceChildren();
  root.dataset.id = card.id;
  root.dataset.status = card.status;
  const head = el('div', { class: 'card-head' },
    el('h2', {},
      el('span', { class: 'op', text: card.op }),
      el('span', { class: `risk risk-${card.risk}`, text: `risk: ${card.risk}` }),
      el('span', { class: `badge status-${card.status}`, 'data-role': 'status', text: card.status })),
    el('p', { class: 'id', text: card.id }));
  root.append(head);
  if (card.needsReconciliation) {
    root.append(el('p', { class: 'alert', text: 'Found executing after a restart: git may have run. It is never re-run; look at the repository and the restore point, then `fluxgit-gateway reconcile`.' }));
  }
  if (card.status === 'pending') {
    root.append(el('p', { class: 'expiry-line' }, 'Expires in ', el('strong', { class: 'expiry', 'data-expires': card.expiresAtMs, text: countdown(card.expiresAtMs) }), ` (at ${time(card.expiresAtMs)})`));
  }
  root.append(
    field('Agent', el('strong', { text: card.agent }), ' ', el('span', { class: 'note', text: '(self-declared by the MCP client, not authenticated)' })),
    field('Repository', el('code', { text: card.repo })),
    field('Reason', el('span', { class: 'reason', text: card.reason })),
    field('Requested', card.requestedAt),
  );
  if (card.paths.length > 0) {
    root.append(el('section', { class: 'sec kind-paths' }, el('h3', { text: `Paths (${card.paths.length})` }), el('pre', { class: 'lines', text: card.paths.join('\n') })));
  }
  if (card.otherAgents) {
    const others = card.otherAgents;
    const list = el('ul', { class: 'others' });
    for (const agent of others.agents || []) {
      const overlap = (agent.overlappingPaths || []).join(', ');
      list.append(el('li', { text: `${agent.agent} (${agent.state}${agent.branch ? `, on ${agent.branch}` : ''})${overlap ? ` also touches: ${overlap}` : ''}` }));
    }
    root.append(el('section', { class: 'sec kind-others' },
      el('h3', { text: `Other agents in this repository (${others.agentCount ?? (others.agents || []).length}; informational, as reported with the proposal)` }),
      list, others.note ? el('p', { class: 'note', text: others.note }) : null));
  }
  for (const section of card.sections) {
    const node = renderSection(section);
    if (node) root.append(node);
  }
  if (card.statusMessage || card.statusReason) {
    root.append(el('p', { class: `outcome status-${card.status}`, text: `${card.status}${card.statusReason ? ` (${card.statusReason})` : ''}${card.statusMessage ? `: ${card.statusMessage}` : ''}` }));
  }
  if (card.result) {
    root.append(el('section', { class: 'sec kind-result' }, el('h3', { text: 'Result' }), el('pre', { class: 'lines', text: JSON.stringify(card.result, null, 2) })));
  }
  if (card.restorePoint) root.append(renderRestorePoint(card.restorePoint));
  if (card.status === 'pending') root.append(renderActions(keptConfirmation, keptReason));
  if (state.message) root.append(el('p', { class: `message ${state.message.kind}`, role: 'status', text: state.message.text }));
  if (card.transitions.length > 0) {
    const list = el('ol', { class: 'history' });
    for (const step of card.transitions) {
      list.append(el('li', { text: `${time(step.atMs)}  ${step.from ?? 'new'} → ${step.to}  by ${step.actor}: ${step.detail}` }));
    }
    root.append(el('details', { class: 'sec' }, el('summary', { text: 'History' }), list));
  }
}

function renderRestorePoint(point) {
  const box = el('section', { class: 'sec kind-restore', 'data-kind': 'restore' });
  box.append(el('h3', { text: 'Restore point' }));
  box.append(field('Id', el('code', { text: point.id })), field('Taken', point.createdAt));
  if (point.refs.length > 0) {
    box.append(el('pre', { class: 'lines', text: point.refs.map((ref) => `${ref.name}: ${ref.before ?? '(none)'} → ${ref.after ?? '(deleted)'}`).join('\n') }));
  }
  if (point.restoredAt) box.append(el('p', { class: 'note', 'data-role': 'restored', text: `Restored at ${point.restoredAt}; restoring again puts the same state back.` }));
  const busy = state.card.status === 'executing' && !state.card.needsReconciliation;
  box.append(el('button', {
    type: 'button',
    class: state.restoreArmed ? 'danger armed' : 'secondary',
    'data-action': 'restore',
    disabled: busy,
    onclick: restore,
    text: state.restoreArmed ? 'Click again to put refs, index and work tree back' : 'Restore',
  }));
  return box;
}

function renderActions(keptConfirmation, keptReason) {
  const card = state.card;
  const box = el('section', { class: 'actions' });
  let input = null;
  const approve = el('button', { type: 'button', class: 'primary', 'data-action': 'approve', onclick: approveCard, text: 'Approve' });
  if (card.confirmation) {
    input = el('input', {
      id: 'confirm-input', type: 'text', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'confirm-help',
      oninput: () => { approve.disabled = input.value.trim() !== card.confirmation; },
      onkeydown: (event) => { if (event.key === 'Enter' && !approve.disabled) approveCard(); },
    });
    input.value = keptConfirmation || '';
    approve.disabled = input.value.trim() !== card.confirmation;
    box.append(el('label', { for: 'confirm-input', id: 'confirm-help', class: 'confirm' },
      'This cannot be undone by git alone. Type ', el('code', { class: 'expected', text: card.confirmation }), ' to approve:'), input);
  }
  const reason = el('input', {
    id: 'reject-reason', type: 'text', placeholder: 'Why not (sent to the agent)', maxlength: 1000,
    onkeydown: (event) => { if (event.key === 'Enter') rejectCard(); },
  });
  reason.value = keptReason || '';
  box.append(el('div', { class: 'buttons' }, approve,
    el('span', { class: 'reject' }, reason, el('button', { type: 'button', class: 'danger', 'data-action': 'reject', onclick: rejectCard, text: 'Reject' }))));
  return box;
}

async function decide(action, body) {
  const card = state.card;
  const answer = await call('POST', `api/proposals/${encodeURIComponent(card.id)}/${action}`, body);
  if (answer.ok) {
    state.message = { kind: 'ok', text: `${action === 'restore' ? 'Restored' : action === 'approve' ? 'Approved' : 'Rejected'}: ${card.id}` };
  } else {
    const reason = answer.data ? answer.data.message : `HTTP ${answer.status}`;
    state.message = { kind: 'error', text: answer.data && answer.data.reason === 'card_changed'
      ? 'The card changed since you looked (the repository moved): look at it again before deciding.'
      : reason };
  }
  state.cardSignature = '';
  await poll();
  if (state.selected === card.id) await loadCard(card.id);
}

function approveCard() {
  const card = state.card;
  if (!card || card.status !== 'pending') return;
  const input = document.getElementById('confirm-input');
  if (card.confirmation && (!input || input.value.trim() !== card.confirmation)) {
    if (input) input.focus();
    return;
  }
  decide('approve', { digest: card.digest, confirmation: input ? input.value.trim() : null });
}

function rejectCard() {
  const card = state.card;
  if (!card || card.status !== 'pending') return;
  const reason = document.getElementById('reject-reason');
  decide('reject', { reason: reason ? reason.value : '' });
}

function restore() {
  if (!state.card || !state.card.restorePoint) return;
  if (!state.restoreArmed) {
    state.restoreArmed = true;
    renderCard();
    setTimeout(() => {
      if (state.restoreArmed) {
        state.restoreArmed = false;
        if (state.card) renderCard();
      }
    }, 5000);
    return;
  }
  state.restoreArmed = false;
  decide('restore', {});
}

function move(step) {
  if (state.queue.length === 0) return;
  const index = state.queue.findIndex((item) => item.id === state.selected);
  const next = Math.min(state.queue.length - 1, Math.max(0, index + step));
  select(state.queue[next].id);
}

function tick() {
  for (const node of document.querySelectorAll('.expiry[data-expires]')) {
    node.textContent = countdown(Number(node.dataset.expires));
  }
}

document.addEventListener('keydown', (event) => {
  const help = document.getElementById('help');
  if (event.key === 'Escape') {
    help.hidden = true;
    if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
    return;
  }
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || event.ctrlKey || event.metaKey || event.altKey) return;
  const actions = {
    j: () => move(1), ArrowDown: () => move(1), k: () => move(-1), ArrowUp: () => move(-1),
    a: approveCard,
    r: () => document.getElementById('reject-reason')?.focus(),
    u: restore,
    '?': () => { help.hidden = !help.hidden; },
  };
  const action = actions[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
});
document.getElementById('help-button').addEventListener('click', () => {
  const help = document.getElementById('help');
  help.hidden = !help.hidden;
});

// A notification's link names one proposal after `#`: select it (the queue shows it once it is listed).
function selectFromAnchor() {
  const id = window.location.hash.slice(1);
  if (/^[A-Za-z0-9_-]{1,128}$/.test(id)) select(id);
}
window.addEventListener('hashchange', selectFromAnchor);
selectFromAnchor();

poll();
setInterval(poll, POLL_MS);
setInterval(tick, 1000);
