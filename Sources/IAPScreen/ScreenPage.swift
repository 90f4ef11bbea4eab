/// The page, embedded in the binary (no network in a car lab): HTML, CSS and
/// a small script that draws `ScreenModel` snapshots and sends
/// `ScreenAction`s. It looks like a car screen: dark, large type, a tab bar
/// at the bottom, readable at arm's length. Elements a test drives carry
/// `data-test` names.
enum ScreenPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>iap-devkit head unit</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg: #0b0d10; --panel: #161a20; --line: #262c35; --text: #f2f4f7; --dim: #9aa4b2; --accent: #3fa9ff; --bad: #ff6b6b; }
  * { box-sizing: border-box; }
  html, body { margin: 0; height: 100%; background: var(--bg); color: var(--text); font: 22px/1.35 system-ui, sans-serif; }
  body { display: flex; flex-direction: column; }
  header { display: flex; gap: 16px; align-items: center; padding: 10px 18px; background: var(--panel); border-bottom: 1px solid var(--line); font-size: 18px; white-space: nowrap; min-width: 0; }
  header span { overflow: hidden; text-overflow: ellipsis; min-width: 0; }
  header .state { font-weight: 600; flex: 0 1 auto; }
  header .state.identified { color: #6fdc8c; } header .state.failed, header .state.disconnected { color: var(--bad); }
  header .app { flex: 0 1 auto; }
  header .status { margin-left: auto; color: var(--dim); flex: 0 1 55%; text-align: right; }
  header .status.bad { color: var(--bad); }
  main { flex: 1; overflow-y: auto; padding: 8px 18px 18px; }
  nav { display: flex; background: var(--panel); border-top: 1px solid var(--line); }
  nav button { flex: 1; padding: 16px 6px; font-size: 20px; background: none; color: var(--dim); border: 0; border-top: 3px solid transparent; }
  nav button.on { color: var(--text); border-top-color: var(--accent); }
  nav .badge { font-size: 12px; background: var(--bad); color: white; border-radius: 8px; padding: 1px 6px; margin-left: 6px; vertical-align: middle; }
  .bar { display: flex; align-items: center; gap: 12px; margin: 6px 0 10px; }
  .bar h1 { font-size: 26px; margin: 0; }
  button.plain { background: var(--panel); color: var(--text); border: 1px solid var(--line); border-radius: 10px; padding: 10px 16px; font-size: 20px; }
  .row { display: flex; align-items: center; gap: 14px; padding: 10px 8px; border-bottom: 1px solid var(--line); cursor: pointer; min-height: 72px; }
  .row.disabled { opacity: .4; cursor: default; }
  .row.selecting { background: #1d2a38; }
  .row .art, .tile .art, .np .art { background: #232a33; border-radius: 8px; display: flex; align-items: center; justify-content: center; color: var(--dim); overflow: hidden; flex: none; }
  .row .art { width: 56px; height: 56px; }
  .art img { width: 100%; height: 100%; object-fit: cover; }
  .row .text { flex: 1; min-width: 0; }
  .row .title { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .row .detail { color: var(--dim); font-size: 18px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .row .mark { color: var(--accent); width: 28px; text-align: center; }
  .row.playing .title { color: var(--accent); }
  .row .badge { font-size: 14px; border: 1px solid var(--dim); border-radius: 6px; padding: 0 6px; color: var(--dim); }
  .section { color: var(--dim); font-size: 17px; text-transform: uppercase; letter-spacing: .06em; margin: 18px 8px 4px; }
  .tiles { display: flex; gap: 12px; overflow-x: auto; padding: 6px 8px 12px; }
  .tile .art { width: 120px; height: 120px; }
  .message { color: var(--dim); padding: 28px 8px; text-align: center; }
  .message.bad { color: var(--bad); }
  .np { display: flex; gap: 28px; align-items: center; padding: 18px 8px; }
  .np .art { width: 220px; height: 220px; font-size: 64px; }
  .np .title { font-size: 34px; font-weight: 650; }
  .np .artist { font-size: 24px; color: var(--dim); }
  .np .album { font-size: 20px; color: var(--dim); }
  .progress { margin: 18px 8px 6px; height: 8px; background: var(--line); border-radius: 4px; overflow: hidden; }
  .progress div { height: 100%; background: var(--accent); width: 0; }
  .times { display: flex; justify-content: space-between; color: var(--dim); font-size: 18px; margin: 0 8px; }
  .controls { display: flex; flex-wrap: wrap; gap: 12px; justify-content: center; margin: 20px 0; }
  .controls button { min-width: 92px; padding: 16px 18px; font-size: 22px; background: var(--panel); color: var(--text); border: 1px solid var(--line); border-radius: 14px; }
  .controls button:active, .row:active { background: #223044; }
  .controls .value { display: block; font-size: 14px; color: var(--accent); }
  .hid { display: flex; gap: 10px; justify-content: center; color: var(--dim); font-size: 16px; align-items: center; }
  .hid button { padding: 8px 14px; font-size: 16px; background: none; color: var(--dim); border: 1px dashed var(--line); border-radius: 10px; }
  /* A head unit's own screen (800×480 and the like): the same page, tighter, transport in view. */
  @media (max-height: 600px) {
    html, body { font-size: 18px; }
    header { padding: 6px 12px; font-size: 16px; }
    main { padding: 4px 12px 8px; }
    nav button { padding: 10px 4px; font-size: 17px; }
    .row { min-height: 56px; padding: 6px 6px; }
    .row .art { width: 44px; height: 44px; }
    .np { gap: 18px; padding: 8px 4px; }
    .np .art { width: 120px; height: 120px; font-size: 40px; }
    .np .title { font-size: 24px; } .np .artist { font-size: 19px; } .np .album { font-size: 16px; }
    .progress { margin: 8px 4px 4px; }
    .times { font-size: 15px; }
    .controls { gap: 8px; margin: 8px 0; }
    .controls button { min-width: 72px; padding: 8px 10px; font-size: 17px; border-radius: 10px; }
    .controls .value { font-size: 12px; }
    .hid { font-size: 14px; } .hid button { padding: 4px 10px; font-size: 14px; }
  }
</style>
</head>
<body>
<header>
  <span class="state" data-test="state">connecting…</span>
  <span class="app" data-test="app"></span>
  <span class="status" data-test="status"></span>
</header>
<main id="main"></main>
<nav id="tabs"></nav>
<script>
"use strict";
let model = null, socket = null, receivedAt = 0;
let view = { tab: null, path: [], nowPlaying: false, queue: false, library: false };
const asked = new Set();
// The status line shows what the user's last tap did; moving to another screen clears it.
let statusCleared = 0;

function go(next) { view = Object.assign(view, next); if (model) statusCleared = model.statusCount; render(); }
function openTab(tab) {
  if (!model.containers[tab.id]) send({ action: 'open', id: tab.id });
  go({ tab: tab.id, path: [tab.id], nowPlaying: false, queue: false, library: false });
}

function send(action) { if (socket && socket.readyState === 1) socket.send(JSON.stringify(action)); }
function connect() {
  socket = new WebSocket(`ws://${location.host}/ws`);
  socket.onmessage = (message) => { model = JSON.parse(message.data); receivedAt = performance.now(); render(); };
  socket.onclose = () => { document.querySelector('[data-test=state]').textContent = 'screen disconnected; reconnecting…'; setTimeout(connect, 1000); };
}
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key === 'test') node.dataset.test = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}
function art(imageID, fallback) {
  const box = el('div', { class: 'art' });
  if (imageID && model.images.includes(imageID)) {
    const image = el('img', { src: '/image/' + encodeURIComponent(imageID), alt: '' });
    image.onerror = () => { box.textContent = fallback; };
    box.append(image);
  } else {
    box.textContent = fallback;
    if (imageID && !asked.has(imageID) && !model.missingImages.includes(imageID)) { asked.add(imageID); send({ action: 'image', id: imageID }); }
  }
  return box;
}
function time(ms) { const s = Math.floor(ms / 1000); return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`; }
function elapsed() {
  const np = model.nowPlaying;
  let value = np.elapsedMilliseconds;
  if (np.state === 'playing' && np.rate > 0) value += (performance.now() - receivedAt) * np.rate;
  return np.durationMilliseconds ? Math.min(value, np.durationMilliseconds) : value;
}

function render() {
  if (!model) return;
  const state = document.querySelector('[data-test=state]');
  state.textContent = model.stageText; state.className = 'state ' + model.stage;
  document.querySelector('[data-test=app]').textContent = model.appName ? model.appName : '';
  const status = document.querySelector('[data-test=status]');
  const fresh = model.statusCount > statusCleared;
  status.textContent = fresh ? model.statuses[0] || '' : '';
  status.className = 'status' + (fresh && model.statusFailed ? ' bad' : '');
  if (model.stage === 'identified' && model.appName && model.tabs.length === 0 && !model.containers[''] && !asked.has('#tabs')) { asked.add('#tabs'); send({ action: 'tabs' }); }
  if (model.stage !== 'identified') { asked.delete('#tabs'); }
  // The first screen is the first tab (and again when the phone's tabs change under it).
  if (!view.nowPlaying && !view.queue && !view.library && model.tabs.length && !model.tabs.some((tab) => tab.id === view.tab)) { openTab(model.tabs[0]); return; }
  // A phone that speaks only standard iAP2 has no tabs: its library is the first screen.
  if (!view.nowPlaying && !view.queue && !view.library && !model.tabs.length && model.library && !model.appName) { go({ library: true }); return; }
  renderTabs();
  const main = document.getElementById('main');
  main.replaceChildren(view.nowPlaying ? nowPlaying() : view.queue ? queue() : view.library ? library() : list());
}

function renderTabs() {
  const nav = document.getElementById('tabs');
  const buttons = model.tabs.map((tab, index) => el('button', {
      class: !view.nowPlaying && !view.queue && !view.library && view.tab === tab.id ? 'on' : '', test: 'tab-' + index,
      onclick: () => openTab(tab) },
    tab.text, tab.badge ? el('span', { class: 'badge' }, tab.badge) : null));
  if (model.library) buttons.push(el('button', { class: view.library ? 'on' : '', test: 'tab-library', onclick: () => go({ library: true, nowPlaying: false, queue: false }) }, 'Media Library'));
  buttons.push(el('button', { class: view.nowPlaying ? 'on' : '', test: 'tab-now-playing', onclick: () => go({ nowPlaying: true, queue: false, library: false }) }, 'Now Playing'));
  nav.replaceChildren(...buttons);
}

function list() {
  const root = model.containers[''];
  if (model.stage !== 'identified') return el('div', { class: 'message', test: 'message' }, model.stageText);
  if (root && root.failure) return el('div', { class: 'message bad', test: 'tabs-error' }, root.failure, ' ', el('button', { class: 'plain', onclick: () => send({ action: 'retry', id: '' }) }, 'Retry'));
  if (!view.tab) return el('div', { class: 'message' }, model.tabs.length ? 'Choose a tab' : 'Loading…');
  const id = view.path[view.path.length - 1];
  const container = model.containers[id];
  const title = id === view.tab ? (model.tabs.find((tab) => tab.id === id) || {}).text : findText(id);
  const bar = el('div', { class: 'bar' },
    view.path.length > 1 ? el('button', { class: 'plain', test: 'back', onclick: () => { view.path.pop(); go({}); } }, '‹ Back') : null,
    el('h1', { test: 'title' }, title || id));
  if (!container || (container.loading && container.items.length === 0)) return el('div', {}, bar, el('div', { class: 'message', test: 'loading' }, 'Loading…'));
  const rows = [];
  const bySection = new Map();
  for (const item of container.items) { if (!bySection.has(item.section)) bySection.set(item.section, []); bySection.get(item.section).push(item); }
  const sections = container.sections.length ? container.sections : [{ id: 0, kind: 'plain' }];
  for (const section of sections) {
    if (section.kind === 'plain' && section.title) rows.push(el('div', { class: 'section' }, section.title));
    if (section.kind === 'empty' || section.kind === 'load_failed') rows.push(el('div', { class: 'message' + (section.kind === 'load_failed' ? ' bad' : '') }, section.title || ''));
    if (section.kind === 'loading') rows.push(el('div', { class: 'message' }, 'Loading…'));
    for (const item of bySection.get(section.id) || []) rows.push(item.imageRow ? imageRow(item) : row(item));
    bySection.delete(section.id);
  }
  for (const items of bySection.values()) for (const item of items) rows.push(item.imageRow ? imageRow(item) : row(item));
  if (container.failure) rows.push(el('div', { class: 'message bad', test: 'failure' }, container.failure, ' ', el('button', { class: 'plain', test: 'retry', onclick: () => send({ action: 'retry', id }) }, 'Retry')));
  else if (container.items.length < container.total) {
    const more = el('div', { class: 'message', test: 'more' }, container.loading ? 'Loading…' : `${container.items.length} of ${container.total}`);
    if (!container.loading) new IntersectionObserver((entries, observer) => { if (entries.some((entry) => entry.isIntersecting)) { observer.disconnect(); send({ action: 'more', id }); } }).observe(more);
    rows.push(more);
  }
  return el('div', {}, bar, ...rows);
}

// The phone's media library: the list the head unit has open in it (it keeps
// where the page is), a row opens its list or plays, ▶ plays a group whole.
function library() {
  const lib = model.library;
  if (model.stage !== 'identified') return el('div', { class: 'message', test: 'message' }, model.stageText);
  if (!lib.synced) return el('div', { class: 'message', test: 'library-syncing' }, `Syncing ${lib.name}… ${lib.progress} %`);
  const bar = el('div', { class: 'bar' },
    lib.depth > 0 ? el('button', { class: 'plain', test: 'library-back', onclick: () => send({ action: 'library_back' }) }, '‹ Back') : null,
    el('h1', { test: 'library-title' }, lib.title));
  const rows = lib.rows.map((item, index) => el('div', { class: 'row' + (item.playing ? ' playing' : ''), test: 'library-row-' + (index + 1),
      onclick: () => send({ action: 'library_open', index: index + 1 }) },
    el('div', { class: 'text' }, el('div', { class: 'title' }, item.text), item.detail ? el('div', { class: 'detail' }, item.detail) : null),
    item.opens && item.playable ? el('button', { class: 'plain', test: 'library-play-' + (index + 1), onclick: (event) => { event.stopPropagation(); send({ action: 'library_play', index: index + 1 }); } }, '▶') : null,
    el('span', { class: 'mark' }, item.playing ? '♪' : item.opens ? '›' : '')));
  if (lib.rows.length < lib.total) {
    const more = el('div', { class: 'message', test: 'library-more' }, `${lib.rows.length} of ${lib.total}`);
    new IntersectionObserver((entries, observer) => { if (entries.some((entry) => entry.isIntersecting)) { observer.disconnect(); send({ action: 'library_more' }); } }).observe(more);
    rows.push(more);
  }
  if (lib.total === 0) rows.push(el('div', { class: 'message' }, 'Empty'));
  return el('div', {}, bar, ...rows);
}

function findText(id) {
  for (const container of Object.values(model.containers)) { const item = container.items.find((candidate) => candidate.id === id); if (item) return item.text; }
  return null;
}

function row(item) {
  const classes = ['row']; if (!item.enabled) classes.push('disabled'); if (model.selecting === item.id) classes.push('selecting');
  // The playing track: the phone's own indicator, or the title now playing names.
  const playing = item.playing !== 'none' || (item.kind === 'playable' && !!model.nowPlaying.title && item.text === model.nowPlaying.title);
  if (playing) classes.push('playing');
  const mark = playing ? '♪' : item.accessory === 'disclosure' || item.kind === 'container' ? '›' : item.accessory === 'cloud' ? '☁' : '';
  return el('div', { class: classes.join(' '), test: 'row-' + item.id, onclick: () => open(item) },
    art(item.image, item.kind === 'container' ? '▤' : '♫'),
    el('div', { class: 'text' }, el('div', { class: 'title' }, item.text), item.detail ? el('div', { class: 'detail' }, item.detail) : null),
    item.badge ? el('span', { class: 'badge' }, item.badge) : null,
    el('span', { class: 'mark' }, model.selecting === item.id ? '…' : mark));
}

function imageRow(item) {
  return el('div', {}, el('div', { class: 'section' }, item.imageRow.title),
    el('div', { class: 'tiles' }, item.imageRow.entries.map((entry) => el('div', { class: 'tile', test: 'tile-' + entry.id,
      onclick: () => { if (entry.selectable) send({ action: 'play', id: item.id, entry: entry.id }); } }, art(entry.image, '▦')))));
}

function open(item) {
  if (!item.enabled) return;
  if (item.kind === 'container') { view.path.push(item.id); if (!model.containers[item.id]) send({ action: 'open', id: item.id }); go({}); }
  else send({ action: 'play', id: item.id });
}

const labels = { previous_track: '◀◀ Previous', toggle_play_pause: 'Play / Pause', next_track: 'Next ▶▶', change_repeat_mode: 'Repeat',
                 change_shuffle_mode: 'Shuffle', change_playback_rate: 'Rate', like: 'Like', dislike: 'Dislike', bookmark: 'Bookmark' };
const transport = ['previous_track', 'toggle_play_pause', 'next_track'];
const nextRepeat = { off: 'all', all: 'one', one: 'off' };
const nextShuffle = { off: 'songs', songs: 'albums', albums: 'off' };

function nowPlaying() {
  const np = model.nowPlaying;
  if (!np.title) return el('div', { class: 'message', test: 'np-empty' }, model.stage === 'identified' ? 'Nothing playing' : model.stageText);
  // Transport first, so it stays in view on a small screen.
  const names = [...transport.filter((name) => model.buttons.includes(name)), ...model.buttons.filter((name) => !transport.includes(name))];
  const controls = names.map((name) => {
    let value = null, action = { action: 'command', name };
    if (name === 'change_repeat_mode') { value = np.repeatMode; action.value = nextRepeat[np.repeatMode] || 'off'; }
    if (name === 'change_shuffle_mode') { value = np.shuffleMode; action.value = nextShuffle[np.shuffleMode] || 'off'; }
    if (name === 'change_playback_rate') value = np.rate.toFixed(2).replace(/0$/, '') + '×';
    if (name === 'toggle_play_pause') value = np.state;
    return el('button', { test: 'control-' + name, onclick: () => send(action) }, labels[name] || name, value !== null ? el('span', { class: 'value', test: 'value-' + name }, value) : null);
  });
  const position = elapsed();
  const duration = np.durationMilliseconds || 0;
  return el('div', {},
    el('div', { class: 'np' }, art(np.artwork, '♫'),
      el('div', {}, el('div', { class: 'title', test: 'np-title' }, np.title), el('div', { class: 'artist', test: 'np-artist' }, np.artist || ''),
        el('div', { class: 'album' }, np.album || ''), el('div', { class: 'album' }, np.appName ? 'from ' + np.appName : ''),
        np.outOfRange.length ? el('div', { class: 'message bad' }, 'out of range: ' + np.outOfRange.join('; ')) : null)),
    el('div', { class: 'progress', onclick: (event) => { if (duration) send({ action: 'command', name: 'change_playback_position', value: Math.round(duration * event.offsetX / event.currentTarget.clientWidth) }); } },
      el('div', { test: 'np-progress', style: `width: ${duration ? (100 * position / duration) : 0}%` })),
    el('div', { class: 'times' }, el('span', { test: 'np-elapsed' }, np.elapsedValid ? time(position) : '?:??'), el('span', {}, time(duration))),
    el('div', { class: 'controls' },
      ...controls.slice(0, transport.filter((name) => model.buttons.includes(name)).length),
      el('button', { test: 'control-skip-back', onclick: () => send({ action: 'command', name: 'skip_backward', value: 15000 }) }, '−15 s'),
      el('button', { test: 'control-skip-forward', onclick: () => send({ action: 'command', name: 'skip_forward', value: 15000 }) }, '+15 s'),
      ...controls.slice(transport.filter((name) => model.buttons.includes(name)).length),
      el('button', { test: 'up-next', onclick: () => { send({ action: 'queue' }); go({ queue: true, nowPlaying: false }); } }, 'Up next')),
    el('div', { class: 'hid' }, 'Steering wheel:',
      ['previous track', 'play/pause', 'next track'].map((button) => el('button', { test: 'hid-' + button.replace(/\W+/g, '-'), onclick: () => send({ action: 'press', button }) }, button))));
}

function queue() {
  const container = model.queue;
  const bar = el('div', { class: 'bar' }, el('button', { class: 'plain', onclick: () => go({ queue: false, nowPlaying: true }) }, '‹ Now Playing'), el('h1', {}, 'Up next'));
  if (!container) return el('div', {}, bar, el('div', { class: 'message' }, 'Loading…'));
  const rows = container.items.map((item, index) => {
    const node = row(item);
    if (index === model.queueCurrentIndex) node.querySelector('.mark').textContent = '♪';
    return node;
  });
  if (container.failure) rows.push(el('div', { class: 'message bad', test: 'queue-failure' }, container.failure));
  else if (container.items.length < container.total) {
    const more = el('div', { class: 'message', test: 'queue-more' }, container.loading ? 'Loading…' : `${container.items.length} of ${container.total}`);
    if (!container.loading) new IntersectionObserver((entries, observer) => { if (entries.some((entry) => entry.isIntersecting)) { observer.disconnect(); send({ action: 'queue_more' }); } }).observe(more);
    rows.push(more);
  }
  return el('div', {}, bar, rows);
}

setInterval(() => { if (model && view.nowPlaying && model.nowPlaying.state === 'playing') render(); }, 500);
connect();
</script>
</body>
</html>
"""#
}
