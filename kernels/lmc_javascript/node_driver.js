// Node side of lmc's JavaScript kernel. Read node_session.py first.
//
// Started as `node --expose-internals node_driver.js` with three private pipes, their fd
// numbers in the environment:
//   LMC_RUN_FD    runs, kernel -> node: one JSON line {"code": "..."} per run
//   LMC_EVENT_FD  events, node -> kernel, JSON lines: ready, start, line, result, error, done
//   LMC_ACK_FD    acknowledgements, kernel -> node: one byte after each "line" event
// The user's console output goes to fds 1 and 2 untouched; nothing else writes there.
//
// How a run executes: the code is parsed with the acorn copy inside node (the same one the
// REPL uses) and cut into its top-level statements. Each statement's own text is compiled as
// a vm.Script in the main context, with line and column offsets so stack traces carry the
// cell's real line numbers. Scripts of one context share their top-level let/const/class, so
// declarations persist from run to run, as in node's REPL. A statement with a top-level
// `await` goes through the REPL's own transform (internal/repl/await). Function
// declarations run first and `var` names are declared first, as hoisting would have it.
// Before each statement runs, a "line" event reports its first line and waits for the
// kernel's acknowledgement, so output and active lines reach the kernel in order.
'use strict';

const fs = require('node:fs');
const vm = require('node:vm');
const util = require('node:util');
const net = require('node:net');
const path = require('node:path');
const readline = require('node:readline');
const { builtinModules, createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');

let acorn = null;
let processTopLevelAwait = null;
try {
  acorn = require('internal/deps/acorn/acorn/dist/acorn');
  ({ processTopLevelAwait } = require('internal/repl/await'));
} catch {
  // Without --expose-internals: whole-cell runs, top-level await via an async wrapper.
}

const RUN_FD = Number(process.env.LMC_RUN_FD);
const EVENT_FD = Number(process.env.LMC_EVENT_FD);
const ACK_FD = Number(process.env.LMC_ACK_FD);
delete process.env.LMC_RUN_FD;
delete process.env.LMC_EVENT_FD;
delete process.env.LMC_ACK_FD;
const FILENAME = 'cell';

// Keyboard input. The code's stdin is /dev/null, so readline's question() would wait for an
// answer that never comes: it gets an empty line at once instead, and the code's stderr says
// why, as lmc says for Python's input() and the shell's read.
const STDIN_HINT =
  'lmc: this code asked for keyboard input, which lmc cannot give it, so it got an empty ' +
  'line; put the values in the code instead.\n';
function answerEmptyLine(Interface, promised) {
  if (!Interface || typeof Interface.prototype.question !== 'function') return;
  const original = Interface.prototype.question;
  Interface.prototype.question = function question(query, ...rest) {
    if (this.input !== process.stdin) return original.call(this, query, ...rest);
    fs.writeSync(2, `${String(query)}\n${STDIN_HINT}`);
    if (promised) return Promise.resolve('');
    const callback = rest.find((argument) => typeof argument === 'function');
    if (callback) process.nextTick(callback, '');
    return undefined;
  };
}
answerEmptyLine(readline.Interface, false);
try {
  answerEmptyLine(require('node:readline/promises').Interface, true);
} catch {
  // An older node without readline/promises.
}
const DRIVER = __filename;

function emit(event) {
  fs.writeSync(EVENT_FD, JSON.stringify(event) + '\n');
}

function waitForAck() {
  const byte = Buffer.alloc(1);
  for (;;) {
    try {
      if (fs.readSync(ACK_FD, byte, 0, 1, null) === 0) process.exit(0); // the kernel is gone
      return;
    } catch (err) {
      if (err.code !== 'EAGAIN' && err.code !== 'EINTR') throw err;
    }
  }
}

// -- console output ----------------------------------------------------------------------

// process.stdout/stderr are net.Sockets on a pipe: a write the pipe cannot take at once is
// queued in node's memory, and an interrupt (breakOnSigint terminates the script wherever it
// is) landing inside console.log's Writable bookkeeping left the stream marked "writing", so
// every later write was queued behind a callback that never came: the kernel lost that node's
// console output for all later runs (and a tight console.log loop piled up megabytes that
// leaked into the next runs). Each write is therefore one plain blocking fs.writeSync to the
// fd: no stream state for an interrupt to tear, and a fast printer waits for the reader.
const SLEEP = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, data) {
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(fd, data, offset);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
      Atomics.wait(SLEEP, 0, 0, 1); // the pipe is full (the fd is non-blocking): wait 1 ms
    }
  }
}

function writeDirectly(stream, fd) {
  stream._handle?.setBlocking?.(true);
  stream.write = function write(chunk, encoding, callback) {
    if (typeof encoding === 'function') [callback, encoding] = [encoding, undefined];
    const data = typeof chunk === 'string' ? Buffer.from(chunk, encoding || 'utf8') : chunk;
    writeAll(fd, data);
    if (typeof callback === 'function') process.nextTick(callback, null);
    return true;
  };
}

// -- the REPL-like global scope ----------------------------------------------------------

function installGlobals() {
  const userRequire = createRequire(path.join(process.cwd(), '[lmc]'));
  Object.defineProperty(globalThis, 'require', {
    value: userRequire, writable: true, configurable: true,
  });
  // As in node's REPL, built-in modules are globals that load on first use.
  for (const name of builtinModules) {
    if (name.startsWith('_') || name.includes('/') || name in globalThis) continue;
    Object.defineProperty(globalThis, name, {
      configurable: true,
      enumerable: false,
      get() {
        const value = userRequire(`node:${name}`);
        Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
        return value;
      },
      set(value) {
        Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
      },
    });
  }
}

// -- cutting a cell into units -----------------------------------------------------------

function declaredNames(pattern, names) {
  if (!pattern) return names;
  switch (pattern.type) {
    case 'Identifier': names.push(pattern.name); break;
    case 'ObjectPattern':
      for (const p of pattern.properties) declaredNames(p.type === 'RestElement' ? p.argument : p.value, names);
      break;
    case 'ArrayPattern': for (const p of pattern.elements) declaredNames(p, names); break;
    case 'AssignmentPattern': declaredNames(pattern.left, names); break;
    case 'RestElement': declaredNames(pattern.argument, names); break;
    default: break;
  }
  return names;
}

function containsTopLevelAwait(source) {
  // The REPL's transform returns null when the code has no top-level await.
  return processTopLevelAwait !== null && processTopLevelAwait(source) !== null;
}

// A unit: { source, line, column, report, isAsync }.
function units(code) {
  if (acorn === null) {
    return [{ source: code, line: 1, column: 0, report: true, isAsync: /\bawait\b/.test(code) }];
  }
  let program;
  try {
    program = acorn.parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowAwaitOutsideFunction: true,
      allowHashBang: true,
      locations: true,
    });
  } catch {
    // Let V8 have its say: it reports the SyntaxError (or accepts syntax acorn lacks).
    return [{ source: code, line: 1, column: 0, report: true, isAsync: false }];
  }
  const hoisted = [];
  const rest = [];
  const vars = [];
  for (const node of program.body) {
    const unit = {
      source: code.slice(node.start, node.end),
      line: node.loc.start.line,
      column: node.loc.start.column,
      report: true,
      isAsync: false,
    };
    if (node.type === 'FunctionDeclaration') {
      unit.report = false;
      hoisted.push(unit);
      continue;
    }
    if (node.type === 'VariableDeclaration' && node.kind === 'var') {
      for (const declaration of node.declarations) declaredNames(declaration.id, vars);
    }
    unit.isAsync = containsTopLevelAwait(unit.source);
    rest.push(unit);
  }
  const prelude = vars.length
    ? [{ source: `var ${[...new Set(vars)].join(', ')};`, line: 1, column: 0, report: false, isAsync: false }]
    : [];
  return [...prelude, ...hoisted, ...rest];
}

// -- running -----------------------------------------------------------------------------

// `import()` in the cell goes to node's own loader where this node has it (20.?+). That loader
// is flagged experimental and says so once on stderr; the warning is about the driver, not
// the user's code, so it alone is dropped, as is the one for the binding that holds SIGINT.
const MAIN_LOADER = vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
const emitWarning = process.emitWarning;
process.emitWarning = function filteredWarning(warning, ...rest) {
  if (String(warning?.message ?? warning).includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
  if (rest[0] === 'internal/test/binding') return; // the driver's own use, below
  return emitWarning.call(process, warning, ...rest);
};

// Elsewhere a callback, which without --experimental-vm-modules only reports that flag.
function importFromCwd(specifier) {
  const relative = specifier.startsWith('./') || specifier.startsWith('../');
  return import(relative ? pathToFileURL(path.resolve(process.cwd(), specifier)).href : specifier);
}

class Interrupted extends Error {}

let interruptCurrent = null;

// SIGINT must never reach node's own handler, which ends node and every global with it.
// breakOnSigint starts node's SIGINT watchdog around a script and, as its only user, puts
// that handler back when the script ends; vm also takes `process.on('SIGINT')` listeners
// off around the script (libuv's handler with them) and puts them back after. A SIGINT in
// either gap killed node: about 1 run in 30 interrupted as its first output came. So the
// driver holds the watchdog for its whole life (node's REPL calls the same binding): its
// handler stays, a script's breakOnSigint only adds a watcher to it, and a SIGINT that
// comes while no script runs is kept as pending, which the driver reads before each script
// and by a short poll while a run awaits. The code's own SIGINT listeners are called from
// that poll too: node is kept from giving SIGINT to libuv for them, whose handler would
// take the watchdog's place. Without the binding: a listener, and the gaps.
const SIGINT_POLL_MS = 5;
const sigint = holdSigintWatchdog();

function holdSigintWatchdog() {
  let contextify = null;
  try {
    contextify = require('internal/test/binding').internalBinding('contextify');
  } catch {
    // Without --expose-internals.
  }
  // node starts libuv's handler for a signal when a listener for it is added (its own
  // 'newListener' hook): that hook is wrapped to leave SIGINT out, once the watchdog is held.
  const hook = process.rawListeners('newListener').find((f) => f.name === 'startListeningIfSignal');
  if (contextify && typeof contextify.startSigintWatchdog === 'function' && hook !== undefined
      && contextify.startSigintWatchdog() && contextify.startSigintWatchdog()) {
    process.removeListener('newListener', hook);
    process.on('newListener', function startListeningUnlessSigint(type) {
      if (type !== 'SIGINT') hook.call(this, type);
    });
    // Held twice: taking the pending flag stops once and starts again, never down to none.
    return { take: () => { const pending = contextify.stopSigintWatchdog(); contextify.startSigintWatchdog(); return pending; } };
  }
  process.on('SIGINT', () => {
    if (interruptCurrent !== null) interruptCurrent();
  });
  return { take: () => false };
}

function onSigint() {
  if (interruptCurrent !== null) interruptCurrent();
  if (process.listenerCount('SIGINT') > 0) process.emit('SIGINT', 'SIGINT');
}

process.on('uncaughtException', (err) => {
  process.stderr.write(`Uncaught ${formatError(err).traceback.join('\n')}\n`);
});
process.on('unhandledRejection', (reason) => {
  process.stderr.write(`Uncaught (in promise) ${formatError(reason).traceback.join('\n')}\n`);
});

function compile(unit) {
  let source = unit.source;
  let column = unit.column;
  let wrapped = false;
  if (unit.isAsync) {
    const transformed = processTopLevelAwait !== null ? processTopLevelAwait(source) : null;
    if (transformed !== null) {
      source = transformed;
    } else {
      source = `(async () => { return { value: eval(${JSON.stringify(source)}) } })()`;
    }
    wrapped = true;
    column = 0;
  }
  const script = new vm.Script(source, {
    filename: FILENAME,
    lineOffset: unit.line - 1,
    columnOffset: column,
    importModuleDynamically: MAIN_LOADER ?? importFromCwd,
  });
  return { script, wrapped };
}

// The value comes back boxed: an async function returning a promise would await it, and a
// statement whose value is a promise the user did not await must stay a promise.
async function runUnit(unit, interrupted) {
  const { script, wrapped } = compile(unit);
  // A script's watchdog clears a pending SIGINT as it stops: read it just before.
  if (sigint.take()) throw new Interrupted('interrupted');
  const value = script.runInThisContext({ breakOnSigint: true, displayErrors: false });
  if (!wrapped) return { value };
  const outcome = await Promise.race([value, interrupted]);
  return { value: outcome && typeof outcome === 'object' && 'value' in outcome ? outcome.value : undefined };
}

async function run(code) {
  const interrupted = new Promise((_, reject) => {
    interruptCurrent = () => reject(new Interrupted('interrupted'));
  });
  interrupted.catch(() => {});
  sigint.take(); // one that came before this run is not for it
  const poll = setInterval(() => {
    if (sigint.take()) onSigint();
  }, SIGINT_POLL_MS);
  emit({ type: 'start' });
  let last;
  let reported = null;
  try {
    for (const unit of units(code)) {
      if (unit.report && unit.line !== reported) {
        reported = unit.line;
        emit({ type: 'line', line: unit.line });
        waitForAck();
      }
      ({ value: last } = await runUnit(unit, interrupted));
    }
    if (last !== undefined) emit({ type: 'result', text: util.inspect(last) });
  } catch (err) {
    if (err instanceof Interrupted || (err && err.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')) {
      emit({ type: 'error', ename: 'KeyboardInterrupt', evalue: 'interrupted', traceback: ['interrupted'] });
    } else {
      emit({ type: 'error', ...formatError(err) });
    }
  } finally {
    clearInterval(poll);
    interruptCurrent = null;
    await new Promise((resolve) => setImmediate(resolve)); // output queued on ticks, warnings
    emit({ type: 'done' });
  }
}

// -- errors ------------------------------------------------------------------------------

function isDriverFrame(line) {
  return /^\s+at /.test(line) && (line.includes(DRIVER) || line.includes('node:vm') || line.includes('node:internal'));
}

function formatError(err) {
  if (!(err instanceof Error) && !(err && typeof err.stack === 'string')) {
    const text = util.inspect(err);
    return { ename: 'Uncaught', evalue: text, traceback: [text] };
  }
  const lines = String(err.stack || `${err.name}: ${err.message}`).split('\n');
  const cut = lines.findIndex(isDriverFrame);
  const traceback = cut === -1 ? lines : lines.slice(0, cut);
  while (traceback.length && traceback[traceback.length - 1].trim() === '') traceback.pop();
  return { ename: String(err.name || 'Error'), evalue: String(err.message ?? ''), traceback };
}

// -- main --------------------------------------------------------------------------------

writeDirectly(process.stdout, 1);
writeDirectly(process.stderr, 2);
installGlobals();
let queue = Promise.resolve();
// A socket, not an fs stream: a thread-pool read blocked on a pipe would hold up process.exit.
const runs = readline.createInterface({ input: new net.Socket({ fd: RUN_FD, readable: true, writable: false }) });
runs.on('line', (line) => {
  const { code } = JSON.parse(line);
  queue = queue.then(() => run(code));
});
runs.on('close', () => process.exit(0));
emit({ type: 'ready', version: process.version });
