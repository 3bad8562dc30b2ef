// The pair page's script: the chosen pass's diffs are drawn here, from the page's data (compare_pages.pair_page),
// so that the page carries each line of IR once; the keys, the toggles, the permalinks and the copied finding.
const DATA = JSON.parse(document.getElementById('data').textContent);
const byId = id => document.getElementById(id);
const options = {
  wrap: byId('opt-wrap').checked,
  ignoreSpace: byId('opt-ws').checked,
  hideAlike: byId('opt-hide').checked,
};
const squashSpace = text => text.replace(/\s+/g, ' ').trim();

// An edit script's steps: an item in both lists, only in the first (removed), only in the second (added).
const SAME = 0, ADDED = 1, REMOVED = 2;

// A shortest edit script of a against b (longest common subsequence): [SAME, i, j], [REMOVED, i, -1],
// [ADDED, -1, j]; in a changed stretch a's items come first. The common head and tail are taken first (most
// diffs change a few lines of many); past 4M cells of table the changed stretch is one replacement, so that a
// large rewrite cannot hang the page.
function editScript(a, b, equal) {
  const head = [], tail = [];
  let start = 0, endA = a.length, endB = b.length;
  while (start < endA && start < endB && equal(a[start], b[start])) { head.push([SAME, start, start]); start++; }
  while (endA > start && endB > start && equal(a[endA - 1], b[endB - 1])) {
    endA--; endB--;
    tail.push([SAME, endA, endB]);
  }
  const n = endA - start, m = endB - start, out = head;
  if (n * m > 4e6) {
    for (let i = start; i < endA; i++) out.push([REMOVED, i, -1]);
    for (let j = start; j < endB; j++) out.push([ADDED, -1, j]);
  } else {
    // common[i * width + j]: the length of the longest common subsequence of a[start + i:] and b[start + j:]
    const width = m + 1, common = new Uint32Array((n + 1) * width);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        common[i * width + j] = equal(a[start + i], b[start + j])
          ? common[(i + 1) * width + j + 1] + 1
          : Math.max(common[(i + 1) * width + j], common[i * width + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && equal(a[start + i], b[start + j])) { out.push([SAME, start + i, start + j]); i++; j++; }
      else if (j >= m || (i < n && common[(i + 1) * width + j] >= common[i * width + j + 1])) {
        out.push([REMOVED, start + i, -1]); i++;
      } else { out.push([ADDED, -1, start + j]); j++; }
    }
  }
  return out.concat(tail.reverse());
}

// a line's words, runs of white space and single other characters: the units of the word-level highlight
const tokens = text => text.match(/\w+|\s+|[^\w\s]/g) || [];
const isSpace = token => /^\s/.test(token);

// The word-level highlight of two lines: each line as segments [text, differs]; null where they share less than
// a third of their characters (two unrelated lines read better whole than as confetti).
function wordHighlights(lineA, lineB) {
  const a = tokens(lineA), b = tokens(lineB);
  const equal = options.ignoreSpace
    ? (p, q) => p === q || (isSpace(p) && isSpace(q))
    : (p, q) => p === q;
  const segmentsA = [], segmentsB = [];
  let sharedChars = 0;
  const append = (segments, text, differs) => {
    const last = segments[segments.length - 1];
    if (last && last[1] === differs) last[0] += text; else segments.push([text, differs]);
  };
  for (const [step, i, j] of editScript(a, b, equal)) {
    if (step === SAME) {
      append(segmentsA, a[i], false);
      append(segmentsB, b[j], false);
      if (!isSpace(a[i])) sharedChars += a[i].length;
    } else if (step === REMOVED) append(segmentsA, a[i], !isSpace(a[i]) || !options.ignoreSpace);
    else append(segmentsB, b[j], !isSpace(b[j]) || !options.ignoreSpace);
  }
  const size = Math.max(squashSpace(lineA).length, squashSpace(lineB).length);
  return size && sharedChars * 3 < size ? null : [segmentsA, segmentsB];
}

// The n-th item of olds beside the n-th of news, their words highlighted where the lines are alike enough (with
// sameSign only where both carry the same + or -), then both runs onto out.
function pairInOrder(olds, news, out, sameSign) {
  for (let n = 0; n < Math.min(olds.length, news.length); n++) {
    if (sameSign && olds[n].prefix !== news[n].prefix) continue;
    const segments = wordHighlights(olds[n].text, news[n].text);
    if (segments) {
      olds[n] = {...olds[n], segments: segments[0]};
      news[n] = {...news[n], segments: segments[1]};
    }
  }
  out.push(...olds, ...news);
}

// A diff's changed stretches (their lines removed, then added): lines equal up to white space pair up first (with
// white space ignored they show once, as re-indented: class 'w'); the others pair in order for the word highlight.
function pairChangedLines(items) {
  const out = [];
  let k = 0;
  const changed = item => item.kind === 'd' || item.kind === 'a';
  while (k < items.length) {
    if (!changed(items[k])) { out.push(items[k++]); continue; }
    const removed = [], added = [];
    while (k < items.length && changed(items[k])) (items[k].kind === 'd' ? removed : added).push(items[k++]);
    let unpairedRemoved = [], unpairedAdded = [];
    const flush = () => {
      pairInOrder(unpairedRemoved, unpairedAdded, out, false);
      unpairedRemoved = [];
      unpairedAdded = [];
    };
    for (const [step, i, j] of editScript(removed, added, (p, q) => squashSpace(p.text) === squashSpace(q.text))) {
      if (step === REMOVED) { unpairedRemoved.push(removed[i]); continue; }
      if (step === ADDED) { unpairedAdded.push(added[j]); continue; }
      flush();
      if (options.ignoreSpace) out.push({...added[j], kind: 'w', prefix: '~', title: 'only its whitespace changed'});
      else pairInOrder([removed[i]], [added[j]], out, false);
    }
    flush();
  }
  return out;
}

// A diff line of the page's data is a number: its text's index in DATA.lines times 4, plus its kind (0 context,
// 1 added, 2 removed, 3 hunk header; compare_pages.LineTable), so that a line many diffs share is stored once.
const PREFIXES = [' ', '+', '-', ''], KIND_CLASSES = ['c', 'a', 'd', 'h'];
// a line's kind (c same, a added, d deleted, h a hunk's header, o / n only the older's / newer's edit, w only its
// white space changed) -> its CSS class
const LINE_CLASSES = {c: 'line-same', a: 'line-added', d: 'line-deleted', h: 'line-hunk', o: 'line-old-only',
  n: 'line-new-only', w: 'line-space'};
function decodeLines(codes) {
  return (codes || []).map(code => ({
    kind: KIND_CLASSES[code & 3], prefix: PREFIXES[code & 3], text: DATA.lines[code >> 2],
  }));
}

// Draw items into a view (a <pre>): a span a line, of its kind's class, its gutter (the third view's release
// names), its prefix, its text with the differing words in <em>; the message `empty` where there are none.
function paintView(pre, items, empty) {
  pre.textContent = '';
  if (!items || !items.length) {
    const span = document.createElement('span');
    span.className = 'line-note';
    span.textContent = empty;
    pre.appendChild(span);
    return;
  }
  const fragment = document.createDocumentFragment();
  for (const item of items) {
    const span = document.createElement('span');
    span.className = LINE_CLASSES[item.kind];
    if (item.title) span.title = item.title;
    if (item.gutter !== undefined) {
      const gutter = document.createElement('b');
      gutter.className = 'gutter';
      gutter.textContent = item.gutter;
      span.appendChild(gutter);
    }
    span.appendChild(document.createTextNode(item.prefix));
    if (item.segments) {
      for (const [text, differs] of item.segments) {
        if (differs) {
          const word = document.createElement('em');
          word.textContent = text;
          span.appendChild(word);
        } else span.appendChild(document.createTextNode(text));
      }
    } else span.appendChild(document.createTextNode(item.text));
    fragment.appendChild(span);
  }
  pre.appendChild(fragment);
}

// A whole-text diff with three lines of context, as the frontend view shows it; the equal lines between hunks
// shrink to a count.
function wholeTextDiff(a, b) {
  const steps = editScript(a, b, options.ignoreSpace ? (p, q) => squashSpace(p) === squashSpace(q) : (p, q) => p === q);
  if (steps.every(step => step[0] === SAME)) return [];
  const shown = new Uint8Array(steps.length);  // within three lines of a change
  steps.forEach((step, x) => {
    if (step[0] === SAME) return;
    for (let y = Math.max(0, x - 3); y <= Math.min(steps.length - 1, x + 3); y++) shown[y] = 1;
  });
  // no hunk header that hides a single equal line: the line itself takes no more room
  for (let x = 1; x + 1 < steps.length; x++) if (!shown[x] && shown[x - 1] && shown[x + 1]) shown[x] = 1;
  const items = [];
  let hidden = 0;
  steps.forEach(([step, i, j], x) => {
    if (!shown[x]) { hidden++; return; }
    if (hidden) { items.push({kind: 'h', prefix: '', text: '@@ ' + hidden + ' equal lines @@'}); hidden = 0; }
    if (step === SAME && a[i] === b[j]) { items.push({kind: 'c', prefix: ' ', text: b[j]}); return; }
    // equal only with white space ignored: shown as a removed and an added line, which pairChangedLines pairs
    if (i >= 0) items.push({kind: 'd', prefix: '-', text: a[i]});
    if (j >= 0) items.push({kind: 'a', prefix: '+', text: b[j]});
  });
  if (hidden) items.push({kind: 'h', prefix: '', text: '@@ ' + hidden + ' equal lines @@'});
  return pairChangedLines(items);
}

// The third view: one release's edit against the other's, over their changed lines (+ and -): the lines both
// edits make (gutter 'both'), those only the older release's makes (class o), those only the newer's (class n).
function editAgainstEdit(row) {
  const changedLines = side => decodeLines(side && side.diff).filter(item => item.kind === 'a' || item.kind === 'd');
  const a = changedLines(row.old), b = changedLines(row.new);
  const key = item => item.prefix + (options.ignoreSpace ? squashSpace(item.text) : item.text);
  const out = [];
  let onlyOld = [], onlyNew = [];
  const flush = () => {
    pairInOrder(onlyOld, onlyNew, out, true);
    onlyOld = [];
    onlyNew = [];
  };
  for (const [step, i, j] of editScript(a, b, (p, q) => key(p) === key(q))) {
    if (step === SAME) {
      flush();
      out.push({kind: 'c', gutter: 'both', prefix: b[j].prefix, text: b[j].text});
    } else if (step === REMOVED) onlyOld.push({kind: 'o', gutter: DATA.old, prefix: a[i].prefix, text: a[i].text});
    else onlyNew.push({kind: 'n', gutter: DATA.new, prefix: b[j].prefix, text: b[j].text});
  }
  flush();
  return foldRuns(out, item => item.kind === 'c', 'lines both edits share');
}

// Runs of more than seven items that pass the test shrink to their first and last two and a count between.
function foldRuns(items, test, what) {
  const out = [];
  let k = 0;
  while (k < items.length) {
    if (!test(items[k])) { out.push(items[k++]); continue; }
    let end = k;
    while (end < items.length && test(items[end])) end++;
    if (end - k > 7) {
      out.push(...items.slice(k, k + 2), {kind: 'h', prefix: '', text: '@@ ' + (end - k - 4) + ' ' + what + ' @@'},
        ...items.slice(end - 2, end));
    } else out.push(...items.slice(k, end));
    k = end;
  }
  return out;
}

// What a release's pane says where it has no diff to draw: no run of the pass, why there is no edit, or a no-op.
function paneMessage(side, release) {
  if (!side) return 'no run of this pass in ' + release;
  if (side.why) return side.pass + ' (step ' + side.step + '): ' + side.why + (side.error ? '\n' + side.error : '');
  return side.pass + ' (step ' + side.step + '): no change (no-op)';
}

// A release's pane title: its run of the pass, status, +/- and milliseconds.
function paneTitle(side, release) {
  if (!side) return release + ': —';
  let title = release + ': ' + side.pass + ' step ' + side.step + ', ' + side.status;
  if (side.added !== null) title += ' +' + side.added + '/-' + side.deleted;
  if (side.seconds !== null) title += ', ' + (side.seconds * 1000).toFixed(2) + ' ms';
  return title;
}

const sequenceRows = [...document.querySelectorAll('#seq tbody tr[data-k]')];  // DATA.rows, in order
let current = -1;  // the chosen row

function showEditAgainstEdit(row) {
  const pre = byId('edit-diff');
  if (!row.old || !row.new) {
    const release = row.old ? DATA.old : DATA.new;
    paintView(pre, [], 'only ' + release + ' runs this pass: its edit above is the whole difference');
    return;
  }
  if (!row.old.diff && !row.new.diff) {
    const unknown = 'edit unknown: ' + (row.old.why || row.new.why || '');
    const why = row.same === null ? unknown : 'neither run changes the IR';
    paintView(pre, [], why);
    return;
  }
  const items = editAgainstEdit(row);
  if (items.every(item => item.kind === 'c' || item.kind === 'h')) {
    byId('edit-title').textContent =
      'the two edits, line by line: the same' + (options.ignoreSpace ? ' (whitespace ignored)' : '');
  }
  paintView(pre, items, '');
}

// Draw the chosen pass: both panes' titles, source links and diffs, the third view and the verdict.
function showPass() {
  const row = DATA.rows[current];
  byId('old-title').textContent = paneTitle(row.old, DATA.old);
  byId('new-title').textContent = paneTitle(row.new, DATA.new);
  for (const side of ['old', 'new']) {
    const anchor = byId(side + '-src'), run = row[side], link = run && (DATA.src[side] || {})[run.pass];
    anchor.hidden = !link;
    if (!link) continue;
    anchor.href = link[0];
    const release = side === 'old' ? DATA.old : DATA.new;
    anchor.textContent = link[1] === 'definition' ? 'source at ' + release : 'search the source';
  }
  for (const [side, release] of [['old', DATA.old], ['new', DATA.new]]) {
    const run = row[side];
    const items = run && run.diff && pairChangedLines(decodeLines(run.diff));
    paintView(byId(side + '-diff'), items, paneMessage(run, release));
  }
  byId('edit-title').textContent =
    DATA.old + "'s edit against " + DATA.new + "'s: orange only in " + DATA.old + ', blue only in ' + DATA.new;
  showEditAgainstEdit(row);
  const verdict = row.same === null ? '' : row.same ? 'the same edit in both releases' : 'the edits differ';
  byId('verdict').textContent = verdict + (row.state ? ' · the IR between the releases: ' + row.state : '');
  byId('finding').hidden = true;
}

// Choose row k: mark it, scroll to it (keys, not clicks), draw it, and put its permalink in the address.
function choosePass(k, scroll) {
  if (k < 0 || k >= sequenceRows.length) return;
  sequenceRows.forEach(tr => tr.classList.remove('selected'));
  current = k;
  const tr = sequenceRows[k];
  tr.classList.add('selected');
  if (scroll) tr.scrollIntoView({block: 'nearest'});
  showPass();
  history.replaceState(null, '', '#pass=' + passRef(k));
}

function isVisible(k) { return k >= 0 && k < sequenceRows.length && !sequenceRows[k].hidden; }

// The next visible row from `from` in direction `direction` (1, -1) that passes `test`; -1 for none.
function nextRow(from, direction, test) {
  for (let k = from + direction; k >= 0 && k < sequenceRows.length; k += direction) {
    if (isVisible(k) && (!test || test(k))) return k;
  }
  return -1;
}

// what n/p step to: a kept pass whose edits differ, or a pass one release alone runs
const editsDiffer = k => DATA.rows[k].same === false || DATA.rows[k].op !== 'kept';

// A permalink names a pass, not a position (it survives a page whose rows moved): NAME, or NAME.N for its N-th run
// in the sequence.
function passRef(k) {
  const row = DATA.rows[k], name = (row.new || row.old).pass;
  let n = 0;
  for (let x = 0; x <= k; x++) {
    const other = DATA.rows[x];
    if ((other.new || other.old).pass === name) n++;
  }
  return encodeURIComponent(name) + (n > 1 ? '.' + n : '');
}

// A permalink whose escapes do not decode (#pass=%) names no pass: the page opens as without one.
function decodeOrNull(text) {
  try { return decodeURIComponent(text); } catch (e) { return null; }
}

// The row the address names (#pos=N, #pass=NAME[.N]), null for none.
function rowFromHash() {
  const hash = location.hash;
  let found = /pos=(\d+)/.exec(hash);
  if (found) return +found[1];
  found = /pass=([^&]+)/.exec(hash);
  if (!found) return null;
  const ref = decodeOrNull(found[1]);
  if (ref === null) return null;
  for (let k = 0; k < sequenceRows.length; k++) if (decodeOrNull(passRef(k)) === ref) return k;
  return null;
}

// Hide the passes whose two edits are the same (when asked), and each phase's heading row with nothing left
// under it; a chosen row that gets hidden hands over to the next visible one.
function applyHideAlike() {
  sequenceRows.forEach((tr, k) => { tr.hidden = options.hideAlike && DATA.rows[k].same === true; });
  document.querySelectorAll('#seq tr.phase').forEach(phase => {
    let next = phase.nextElementSibling, any = false;
    while (next && !next.classList.contains('phase')) {
      if (!next.hidden) any = true;
      next = next.nextElementSibling;
    }
    phase.hidden = !any;
  });
  if (current >= 0 && !isVisible(current)) {
    const k = nextRow(current, 1) >= 0 ? nextRow(current, 1) : nextRow(current, -1);
    if (k >= 0) choosePass(k, true);
  }
}

// The IR handed to the first pass, both releases' in one diff.
function showFrontend() {
  const a = (DATA.init.old || []).map(i => DATA.lines[i]), b = (DATA.init.new || []).map(i => DATA.lines[i]);
  if (!DATA.init.old || !DATA.init.new) { paintView(byId('initial-diff'), [], 'not in the archives'); return; }
  paintView(byId('initial-diff'), wholeTextDiff(a, b),
    options.ignoreSpace ? 'identical (whitespace ignored)' : 'identical (after normalisation)');
}

// The chosen pass as Markdown for an issue: the pair, the pass, the verdict, its permalink and both edits; shown
// in the text box and copied where the browser lets a file:// page use the clipboard.
function copyFinding() {
  if (current < 0) return;
  const row = DATA.rows[current], name = (row.new || row.old).pass;
  const url = location.href.split('#')[0] + '#pass=' + passRef(current);
  const block = side => side && side.diff
    ? '```diff\n' + decodeLines(side.diff).map(item => item.prefix + item.text).join('\n') + '\n```'
    : '(no edit)';
  const markdown = [
    '**' + DATA.label + '**, ' + DATA.old + ' → ' + DATA.new + ': ' + name +
      ' (step ' + (row.old ? row.old.step : '—') + ' / ' + (row.new ? row.new.step : '—') + ') — ' +
      byId('verdict').textContent,
    '', url, '', DATA.old + "'s edit:", block(row.old), '', DATA.new + "'s edit:", block(row.new),
  ].join('\n');
  const box = byId('finding');
  box.hidden = false;
  box.value = markdown;
  box.select();
  if (navigator.clipboard) navigator.clipboard.writeText(markdown).catch(() => {});
}

// Scrolling one release's pane scrolls the other to the same fraction (`echo`: the scroll event the other's
// own move then fires is not passed back).
function syncScroll(from, to) {
  let echo = false;
  from.addEventListener('scroll', () => {
    if (echo) { echo = false; return; }
    const fraction = from.scrollTop / Math.max(1, from.scrollHeight - from.clientHeight);
    echo = true;
    to.scrollTop = fraction * (to.scrollHeight - to.clientHeight);
  });
}
syncScroll(byId('old-diff'), byId('new-diff'));
syncScroll(byId('new-diff'), byId('old-diff'));

function applyWrap() { document.body.classList.toggle('nowrap', !options.wrap); }
byId('opt-wrap').addEventListener('change', event => { options.wrap = event.target.checked; applyWrap(); });
byId('opt-ws').addEventListener('change', event => {
  options.ignoreSpace = event.target.checked;
  showPass();
  showFrontend();
});
byId('opt-hide').addEventListener('change', event => { options.hideAlike = event.target.checked; applyHideAlike(); });
byId('copy').addEventListener('click', copyFinding);
sequenceRows.forEach((tr, k) => tr.addEventListener('click', () => choosePass(k, false)));
document.addEventListener('keydown', event => {
  // typing in the text box, or a browser shortcut, is not a key of the page
  const typing = event.target.tagName === 'INPUT' || event.target.tagName === 'TEXTAREA';
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const move = {
    ArrowDown: [1], j: [1], ArrowUp: [-1], k: [-1], n: [1, editsDiffer], p: [-1, editsDiffer], N: [-1, editsDiffer],
  }[event.key];
  if (!move) return;
  const k = nextRow(current, move[0], move[1]);
  if (k >= 0) choosePass(k, true);
  event.preventDefault();
});
applyWrap();
applyHideAlike();
showFrontend();
// the pass the address names, else the one the page opens on (the first divergent edit), else the first shown
const fromHash = rowFromHash();
choosePass(fromHash !== null ? fromHash : (isVisible(DATA.start) ? DATA.start : Math.max(0, nextRow(-1, 1))), true);
