'use strict';
// The stream-task lifecycle, written from spec/lifecycle.toml and spec/README.md alone.
//
// The table is data: ROWS maps "status event" to its row; every other pair is rejected.
// handle() looks the pair up and either starts a two-phase row, queues an attached row,
// or applies a plain row; after every applied change the waiting queue is drained in FIFO
// order while its head's required status is the current status.

const ROWS = new Map();

function row(from, event, to, options = {}) {
  ROWS.set(`${from} ${event}`, {
    from, event, to, twoPhase: options.twoPhase === true, attach: options.attach ?? null,
  });
}

// [[transition]] rows of spec/lifecycle.toml, in its order.
row('uninit', 'init', 'ready', { twoPhase: true });
row('uninit', 'init_scanhist', 'scan_history', { twoPhase: true });
row('scan_history', 'scanhist_done', 'ready');
row('ready', 'halt', 'halt');
row('halt', 'halt', 'halt');
row('ck', 'halt', 'halt', { attach: 'ready' });
row('pause', 'halt', 'halt');
row('ready', 'gen_checkpoint', 'ck');
row('ck', 'checkpoint_done', 'ready');
row('ready', 'pause', 'pause');
row('scan_history', 'pause', 'pause');
row('ck', 'pause', 'pause', { attach: 'ready' });
row('halt', 'pause', 'pause', { attach: 'ready' });
row('uninit', 'pause', 'pause');
row('pause', 'pause', 'pause');
row('stop', 'pause', 'stop');
row('dropping', 'pause', 'dropping');
for (const from of ['ready', 'dropping', 'uninit', 'stop', 'scan_history', 'halt', 'pause', 'ck']) {
  row(from, 'stop', 'stop');
  row(from, 'dropping', 'dropping');
}

// [semantics]
const DROPS_WAITING = new Set(['stop', 'dropping', 'uninit']);
const RESUMABLE = new Set(['pause', 'halt']);
const SET_READY_REFUSED = new Set(['dropping']);

const STATUSES = ['ready', 'dropping', 'uninit', 'stop', 'scan_history', 'halt', 'pause', 'ck'];
const EVENTS = [
  'init', 'init_scanhist', 'scanhist_done', 'stop', 'gen_checkpoint', 'checkpoint_done',
  'pause', 'resume', 'halt', 'dropping',
];

class TaskLifecycle {
  constructor() {
    this.status = 'uninit';
    this.prevStatus = null;
    this.prevEvent = null;
    this.active = null; // a started two-phase event awaiting complete()
    this.waiting = []; // attached events, FIFO: [required status, event]
    this.saved = []; // statuses resume() restores, innermost last
  }

  handle(event) {
    const found = ROWS.get(`${this.status} ${event}`);
    if (found === undefined) return 'rejected';
    if (found.twoPhase) {
      this.active = event;
      return 'started';
    }
    this.active = null;
    if (found.attach !== null) {
      this.waiting.push([found.attach, event]);
      return 'pending';
    }
    this.apply(found);
    this.fireWaiting();
    return 'applied';
  }

  complete(event) {
    if (this.active === null || this.active !== event) return 'rejected';
    this.active = null;
    this.apply(ROWS.get(`${this.status} ${event}`));
    this.fireWaiting();
    return 'applied';
  }

  restore() {
    const old = this.status;
    if (!RESUMABLE.has(old)) return 'rejected';
    this.status = this.saved.pop();
    this.record(old, null);
    this.fireWaiting();
    return 'applied';
  }

  reset() {
    this.force('uninit');
  }

  setReady() {
    if (SET_READY_REFUSED.has(this.status)) return 'rejected';
    this.force('ready');
    return 'applied';
  }

  force(status) {
    const old = this.status;
    this.status = status;
    this.active = null;
    this.waiting = [];
    this.saved = [];
    this.record(old, null);
  }

  apply(found) {
    const old = this.status;
    this.status = found.to;
    if (!RESUMABLE.has(this.status)) this.saved = [];
    else if (this.status !== old) this.saved.push(old);
    this.record(old, found.event);
  }

  record(old, event) {
    this.prevStatus = old;
    this.prevEvent = event;
    if (DROPS_WAITING.has(this.status)) this.waiting = [];
  }

  fireWaiting() {
    while (this.waiting.length > 0 && this.waiting[0][0] === this.status) {
      const [status, event] = this.waiting.shift();
      this.apply(ROWS.get(`${status} ${event}`));
    }
  }
}

module.exports = { EVENTS, ROWS, STATUSES, TaskLifecycle };
