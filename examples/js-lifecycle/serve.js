#!/usr/bin/env node
'use strict';
// A level-1 implementation of the statemeta harness protocol (docs/harness-protocol.md):
// one task lifecycle per slot of the task pool the harness sends in `start`.
//
//   statemeta check --sut "node examples/js-lifecycle/serve.js" --level 1

const readline = require('node:readline');
const { EVENTS, TaskLifecycle } = require('./lifecycle.js');

const PROTOCOL = 1;
const TWO_PHASE_EVENTS = ['init', 'init_scanhist'];

let slots = null; // [[slot name, TaskLifecycle]] in pool order, while an instance runs

class ProtocolError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function lifecycleOf(args) {
  const found = slots.find(([name]) => name === args.task);
  if (found === undefined) throw new ProtocolError('bad_args', `no task slot ${JSON.stringify(args.task)}`);
  return found[1];
}

function eventOf(args, allowed) {
  if (!allowed.includes(args.event)) {
    throw new ProtocolError('bad_args', `event ${JSON.stringify(args.event)} is not one of ${allowed}`);
  }
  return args.event;
}

// Each operation of level 1: its result is {"ok": value}.
const OPERATIONS = {
  handle: (args) => lifecycleOf(args).handle(eventOf(args, EVENTS)),
  complete: (args) => lifecycleOf(args).complete(eventOf(args, TWO_PHASE_EVENTS)),
  restore: (args) => lifecycleOf(args).restore(),
  reset: (args) => {
    lifecycleOf(args).reset();
    return null;
  },
  set_ready: (args) => lifecycleOf(args).setReady(),
};

function view() {
  return {
    level: 1,
    tasks: slots.map(([slot, lc]) => ({
      slot,
      status: lc.status,
      saved: [...lc.saved],
      active: lc.active,
      waiting: lc.waiting.map(([status, event]) => [status, event]),
      prev_status: lc.prevStatus,
      prev_event: lc.prevEvent,
    })),
  };
}

function answer(op, args) {
  switch (op) {
    case 'hello':
      if (args.protocol !== PROTOCOL) {
        throw new ProtocolError('unsupported_protocol', `this implementation speaks protocol ${PROTOCOL}`);
      }
      return { protocol: PROTOCOL, name: 'js-lifecycle (examples/js-lifecycle)', levels: [1] };
    case 'start':
      if (args.level !== 1) throw new ProtocolError('unsupported_level', `level ${args.level}`);
      slots = args.pool.map((task) => [task.slot, new TaskLifecycle()]);
      return null;
    case 'stop':
      slots = null;
      return null;
    default:
      if (slots === null) throw new ProtocolError('not_started', `${op} before start`);
      if (op === 'view') return view();
      if (!Object.hasOwn(OPERATIONS, op)) throw new ProtocolError('unknown_op', `no operation ${op} at level 1`);
      return { ok: OPERATIONS[op](args) };
  }
}

function respond(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    return { id: null, error: { code: 'bad_request', message: `not JSON: ${error.message}` } };
  }
  try {
    return { id: request.id, result: answer(request.op, request.args ?? {}) };
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    return { id: request.id, error: { code: error.code, message: error.message } };
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on('line', (line) => {
  if (line.trim() !== '') process.stdout.write(`${JSON.stringify(respond(line))}\n`);
});
