/* hookengine prelude: runs once in every QuickJS context a worker prepares for a script. The
   context is then reused for many calls of that script, so everything reachable across calls is
   frozen here: every built-in, every prototype and intrinsic, and (by the worker, right after this
   file) globalThis itself. The script's top-level code runs again, in strict mode, in a new
   function scope on every call, so its variables and closures are new each time; or, for a script
   the host found eligible (see jsscope.py), it runs once per context and only frozen plain copies
   of its constants are kept (see keep). Host API calls never leave JS, because the binding
   refuses Python callbacks while a time limit is set. */
globalThis.__he = (function (g) {
  "use strict";
  var indirectEval = g.eval, parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze;
  var isArray = Array.isArray, getProto = Object.getPrototypeOf, hasOwn = Object.prototype.hasOwnProperty;
  var ownSymbols = Object.getOwnPropertySymbols, ownKeys = Reflect.ownKeys, gopd = Object.getOwnPropertyDescriptor;
  var defineProperty = Object.defineProperty, create = Object.create, RegExpCtor = RegExp;
  var ObjProto = Object.prototype, ArrProto = Array.prototype, hostSource = g.__heHost, regexSource = g.__heRegex, lib = null, impl = null, script = null;

  function noStrings() { throw new EvalError("code from strings is not allowed"); }
  /* No clocks, randomness or code from strings: the Python policy forbids the same. */
  [Function.prototype, getProto(function* () {}), getProto(async function () {}),
   getProto(async function* () {})].forEach(function (p) {
    Object.defineProperty(p, "constructor", { value: noStrings });
  });
  /* Date keeps its calendar but loses its clock: see callDate below. */
  var RealDate = g.Date, construct = Reflect.construct, dateParse = RealDate.parse;
  delete RealDate.now;
  ["eval", "Date", "performance", "WeakRef", "FinalizationRegistry", "SharedArrayBuffer",
   "Atomics", "queueMicrotask", "__heHost", "__heRegex"].forEach(function (k) { delete g[k]; });
  /* The running call: its request, its output and its time (ms, or NaN when the event has
     none); null at load time and between calls. console and Date read it. The time is read
     from the event's text as the call starts (``timeText``: a string, which nothing can
     change) and parsed only when a Date asks for it: most calls never do. */
  var current = null, currentOut = null, currentTime = NaN, timeText = null;
  /* Date with the call's frozen time: ``new Date()`` and ``Date.now()`` give the event's time
     (host.now()), so a replay decides the same way and no script can read a clock (no
     timing attack, no real time). With arguments it is the ordinary Date; the worker runs in
     UTC, so local-time methods are UTC ones. The real constructor stays in this closure:
     Date.prototype.constructor is this one. */
  function callTime(what) {
    if (current === null) { throw new TypeError(what + ": the time is only known inside an on_<point> call (it is host.now())"); }
    if (timeText !== null) { currentTime = dateParse(timeText.replace(/(\.\d{3})\d+/, "$1")); timeText = null; }
    if (currentTime !== currentTime) { throw new TypeError(what + ": this event has no time (host.now() is null)"); }
    return currentTime;
  }
  function Date(year, month, day, hours, minutes, seconds, ms) {
    if (new.target === undefined) { return new RealDate(callTime("Date()")).toString(); }
    return construct(RealDate, arguments.length === 0 ? [callTime("new Date()")] : arguments, new.target);
  }
  Date.prototype = RealDate.prototype;
  defineProperty(RealDate.prototype, "constructor", { value: Date, writable: false, enumerable: false, configurable: false });
  Date.now = function now() { return callTime("Date.now()"); };
  Date.parse = dateParse;
  Date.UTC = RealDate.UTC;
  g.Date = Date;
  /* The event's time as text (Python writes microseconds; callTime cuts them to the
     milliseconds Date.parse reads), or null. */
  function timeTextOf(event) {
    var t = event !== null && typeof event === "object" && hasOwn.call(event, "time") ? event.time : null;
    return typeof t === "string" ? t : null;
  }
  /* console.log/info/warn/error/debug: host.log with the level leading the line (log and info
     plain). Each value is shown as text the way the call's results are checked (JSON, within
     the same depth and size caps), an Error as its name and message; the line is cut at the log
     cap, never refused. Outside a call (at load) nothing is logged. */
  function shown(v, L, room) {
    if (typeof v === "string") { return v.length > room ? v.slice(0, room) : v; }
    if (v === undefined) { return "undefined"; }
    if (typeof v === "symbol") { return "[symbol]"; }
    if (typeof v === "function") { return "[function]"; }
    if (typeof v !== "object" || v === null) { return typeof v === "bigint" ? String(v) + "n" : String(v); }
    if (v instanceof Error) { var d = describe(v); return d.type + ": " + d.message; }
    try {
      return toJSON(v, L.max_depth, room, "console", false);
    } catch (e) {
      /* only the checker's own refusals become a marker; a script's error still propagates */
      if (e !== null && typeof e === "object" && e.heHost === true) { return "[object]"; }
      throw e;
    }
  }
  function logger(level) {
    return function () {
      if (current === null) { return undefined; }
      var L = current.limits, cap = L.max_text_chars, line = level, n = arguments.length;
      for (var i = 0; i < n && line.length < cap; i++) {
        line += (i === 0 ? "" : " ") + shown(arguments[i], L, cap - line.length);
      }
      api(current, currentOut).log(line.length > cap ? line.slice(0, cap) : line);
      return undefined;
    };
  }
  g.console = freeze({ log: logger(""), info: logger(""), debug: logger("debug: "), warn: logger("warn: "), error: logger("error: ") });
  /* Accessors whose setters keep a realm-wide value that freezing cannot stop: a call could
     leave a number or a function there for the next one. */
  delete Error.stackTraceLimit;
  delete Error.prepareStackTrace;
  g.Function = noStrings;
  /* The one method that rewrites a RegExp's internal slots in place (frozen or not): a regex
     kept across calls (see keep) must stay the regex it was. */
  delete RegExp.prototype.compile;
  Math.random = function random() { throw new TypeError("Math.random is not available"); };
  /* Freeze everything reachable from the built-ins and the intrinsics no global names (iterator,
     generator and async prototypes, %ThrowTypeError%): objects, their prototypes, getters and
     setters. A call can then neither poison what this wrapper uses nor leave anything behind.
     This walk is most of the cost of preparing a context, so it is a plain loop that looks
     at no more than it must: a closure per property, and the descriptors of every built-in
     function's length and name, made it about 1.4 times as slow (bench/bench_js_runtime.py
     prints what preparing a context costs). */
  function deepFreeze(roots) {
    var seen = new Set(), todo = roots.slice();
    while (todo.length) {
      var o = todo.pop();
      if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) { continue; }
      seen.add(o);
      if (o !== g) { freeze(o); }
      todo.push(getProto(o));
      var keys = ownKeys(o), fn = typeof o === "function";
      for (var i = 0; i < keys.length; i++) {
        /* A built-in function's length and name are numbers and strings (the walker test in
           test_fresh_state.py would see a getter there) */
        if (fn && (keys[i] === "length" || keys[i] === "name")) { continue; }
        var d = gopd(o, keys[i]);
        if (d === undefined) { continue; }
        if (!("value" in d)) { todo.push(d.get, d.set); continue; }
        var v = d.value;
        if (typeof v === "object" ? v !== null : typeof v === "function") { todo.push(v); }
      }
    }
    return seen;
  }
  var realm = deepFreeze([g, getProto(function* () {}), getProto(async function () {}), getProto(async function* () {}),
    getProto([][Symbol.iterator]()), getProto(new Map()[Symbol.iterator]()), getProto(new Set()[Symbol.iterator]()),
    getProto(""[Symbol.iterator]()), getProto(/a/[Symbol.matchAll]("")),
    getProto([].values().map(function (x) { return x; })), getProto(Iterator.from({ next: function () {} })),
    Object.getOwnPropertyDescriptor(arguments, "callee").get]);

  /* A misuse of the host API is marked (not enumerable, so it does not show in the error's
     JSON or keys), so it is never mistaken for a write to a kept constant. */
  function hostError(msg) { var e = new TypeError(msg); defineProperty(e, "heHost", { value: true }); return e; }
  function fail(where, msg) { throw hostError(where + ": " + msg); }
  function invalid(msg, mark) { var e = hostError(msg); if (mark) { e.heInvalid = true; } return e; }
  /* JSON.stringify runs getters, Proxies and toJSON here, inside the time limit; the replacer
     refuses anything that is not plain JSON (JSON.rawJSON text included: it would carry what
     the number checks refuse), and finds cycles itself (the objects on the path to a value are
     kept by depth), so no error is told by its message. */
  var isRawJSON = typeof JSON.isRawJSON === "function" ? JSON.isRawJSON : function () { return false; };
  function toJSON(value, maxDepth, maxChars, where, mark) {
    var depth = new Map(), path = [];
    var s = stringify(value, function (key, v) {
      var d = key === "" && !depth.has(this) ? 0 : depth.get(this) + 1;
      if (v === null || typeof v === "string" || typeof v === "boolean") { return v; }
      if (typeof v === "number") {
        if (!Number.isFinite(v)) { throw invalid(where + ": numbers must be finite", mark); }
        if (v === Math.floor(v) && !Number.isSafeInteger(v)) { throw invalid(where + ": integers must be within +-(2**53 - 1)", mark); }
        return v;
      }
      if (typeof v !== "object") { throw invalid(where + ": " + typeof v + " is not JSON", mark); }
      var p = getProto(v);
      if (p === null && isRawJSON(v)) { throw invalid(where + ": JSON.rawJSON values are not JSON data", mark); }
      if (isArray(v) ? p !== ArrProto : (p !== ObjProto && p !== null)) { throw invalid(where + ": only plain objects and arrays are JSON", mark); }
      for (var i = 0; i < d && i < path.length; i++) {
        if (path[i] === v) { throw invalid(where + ": contains a cycle", mark); }
      }
      if (d >= maxDepth) { throw invalid(where + ": nested deeper than " + maxDepth + " levels", mark); }
      /* JSON.stringify would drop them silently: a change must not lose fields unseen */
      if (ownSymbols(v).length > 0) { throw invalid(where + ": symbol-keyed properties are not JSON", mark); }
      depth.set(v, d);
      path.length = d;
      path.push(v);
      return v;
    });
    if (s === undefined) { throw invalid(where + ": not JSON", mark); }
    if (s.length > maxChars) { throw invalid(where + ": larger than " + maxChars + " bytes", mark); }
    return s;
  }
  /* The host API is parsed on first use (QuickJS parses ~20 KB/ms and a guard that only reads
     host.config should not pay for it); host.js gets the helpers it shares with this file. */
  function hostLib() {
    if (lib === null) {
      lib = indirectEval(hostSource)({ eval: indirectEval, toJSON: toJSON, fail: fail, regexSource: regexSource });
    }
    return lib;
  }
  function api(req, out) {
    if (impl === null) { impl = hostLib().api(req, out); }
    return impl;
  }
  /* The compiled-pattern cache lives for one call: which patterns another call (another user,
     another script) compiled must not be observable, not even by timing. */
  function freshPatterns() { if (lib !== null) { lib.reset(); } }
  /* The host API's functions, made once per context and frozen (arrow functions: there is no
     prototype object to write to): each acts for the running call (current, currentOut). A
     call's host object is one frozen object of its own holding them and its config; making
     eleven closures and three objects for every call cost about a fifth of the no_deletes
     guard's call (bench/bench_js_runtime.py). */
  function shared(name) {
    return freeze((...args) => {
      if (current === null) { fail("host", "used after its call ended"); }
      return api(current, currentOut)[name].apply(undefined, args);
    });
  }
  var HOST = { log: shared("log"), now: shared("now"), emit: shared("emit"), match: shared("match"),
    redact: shared("redact"), add_artifact: shared("add_artifact"),
    state: freeze({ get: shared("get"), set: shared("set") }),
    entries: freeze({ add: shared("entriesAdd"), list: shared("entriesList") }) };
  function makeHost(req) {
    return freeze({ config: req.config, log: HOST.log, now: HOST.now, emit: HOST.emit, match: HOST.match,
      redact: HOST.redact, add_artifact: HOST.add_artifact, state: HOST.state, entries: HOST.entries });
  }

  function describe(e) {
    var out = { type: "Error", message: "", stack: "", invalid: false, thrown_null: false };
    try {
      if (e !== null && typeof e === "object") {
        out.type = typeof e.name === "string" ? e.name.slice(0, 100) : "Error";
        out.message = typeof e.message === "string" ? e.message.slice(0, 1000) : "";
        out.stack = typeof e.stack === "string" ? e.stack.slice(0, 2000) : "";
        out.invalid = e.heInvalid === true;
      } else if (e === null) {
        /* QuickJS throws null when it runs out of memory while making the error itself */
        out.message = "script threw null (or ran out of memory while throwing)";
        out.thrown_null = true;
      } else { out.message = "script threw a non-Error value (" + typeof e + ")"; }
    } catch (inner) { out.message = "script threw an unreadable value"; }
    return out;
  }

  /* The limits arrive as JSON text, the same text call after call: parsed once per change. */
  var limitsText = null, limits = null;
  function limitsOf(text) {
    if (text !== limitsText) { limits = freeze(parse(text)); limitsText = text; }
    return limits;
  }
  function utf8Length(s) {
    var n = 0;
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      n += c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) ? (i++, 4) : 3;
    }
    return n;
  }

  /* host.config of the calls that come with a config key: parsed once per (context, key) and
     deep-frozen; each call gets a new object holding its values (configOf), so a key a call
     sets stays its own, and what the values hold no call can change. A hook's config changes
     only on reload, so a few are kept. */
  var configs = new Map();
  function setConfig(key, text) {
    if (configs.size >= 4) { configs.clear(); }
    configs.set(key, freezeParsed(parse(text)));
  }
  function configOf(frozen) {
    if (frozen === null || typeof frozen !== "object") { return frozen; }
    if (isArray(frozen)) { return frozen.slice(); }
    var own = {}, keys = ownKeys(frozen);
    for (var i = 0; i < keys.length; i++) {
      defineProperty(own, keys[i], { value: frozen[keys[i]], writable: true, enumerable: true, configurable: true });
    }
    return own;
  }
  function freezeParsed(root) {
    var todo = [root];
    while (todo.length) {
      var v = todo.pop();
      if (v !== null && typeof v === "object") {
        freeze(v);
        var keys = ownKeys(v);
        for (var i = 0; i < keys.length; i++) { todo.push(v[keys[i]]); }
      }
    }
    return root;
  }

  /* Set by prepare for a script whose top level runs once per context (see keep): ``body`` is
     the script with each top-level const bound to its kept, frozen copy, run per call. */
  var body = null, kept = null;

  /* One call of the loaded script. On success the answer line itself (checked here, inside the
     limits, so the worker only forwards it); on failure a description of the error for the
     worker to classify. ``request()`` makes the call's inputs (new objects each time it is
     asked); ``perCall`` runs the whole top level anew even if constants are kept. */
  function run(request, perCall) {
    var req = request(), L = req.limits, value;
    var out = { logs: [], dropped_logs: 0, emits: [], state_writes: {}, state_ttls: {}, entries_added: [], entries_read: false };
    impl = null;
    freshPatterns();
    current = req;
    currentOut = out;
    currentTime = NaN;
    timeText = timeTextOf(req.event);
    try {
      if (script === null) { fail("call", "no script is loaded"); }
      var fns = perCall || kept === null ? script() : body(kept);
      var fn = hasOwn.call(fns, req.function) ? fns[req.function] : undefined;
      if (typeof fn !== "function") { fail("call", "the script defines no function " + req.function); }
      var raw = fn(req.event, makeHost(req));
      /* a tool's answer is any JSON value, carried in an object (guards.TOOL_ENTRY) */
      if (req.function === "run" && !(raw !== null && typeof raw === "object" && typeof raw.then === "function")) { raw = { run: raw }; }
      if (raw !== null && typeof raw === "object" && typeof raw.then === "function") { throw invalid("result: async functions and promises are not supported", true); }
      if (raw !== undefined && raw !== null && (typeof raw !== "object" || isArray(raw))) { throw invalid("result: must be null or a plain object, not " + (isArray(raw) ? "an array" : typeof raw), true); }
      value = raw === undefined || raw === null ? "null" : toJSON(raw, L.max_depth, L.max_result_bytes, "result", true);
      /* a toJSON method (a Date has one) may turn the object into any JSON value */
      if (value !== "null" && value.charAt(0) !== "{") {
        throw invalid("result: must be null or a plain object, not " + (value.charAt(0) === "[" ? "an array" : value.charAt(0) === "\"" ? "a string" : "a " + typeof parse(value)) + " (from its toJSON method)", true);
      }
      if (value.length * 3 > L.max_result_bytes && utf8Length(value) > L.max_result_bytes) { throw invalid("result: larger than " + L.max_result_bytes + " bytes", true); }
    } catch (e) {
      /* A TypeError with kept constants may be a write to one of them, which a fresh top level
         would have allowed: the call runs again with a fresh top level, and so do all later
         calls of this context ("!" tells the worker). Such a script has no try, async code or
         reflection on frozenness (jsscope.py), so the error could not have been swallowed;
         the event, state and config it gets are new, so what the first run changed is gone. */
      if (!perCall && kept !== null && e instanceof TypeError && !e.heInvalid && !e.heHost) {
        body = null;
        kept = null;
        return ["!", run(request, true)].join("");  /* joined: see the answer below */
      }
      return stringify({ ok: false, error: describe(e) });
    } finally { current = null; currentOut = null; }
    if (out.dropped_logs) { out.logs.push("[" + out.dropped_logs + " more log lines dropped]"); }
    if (out.logs.length === 0 && out.emits.length === 0 && ownKeys(out.state_writes).length === 0 &&
        out.entries_added.length === 0 && !out.entries_read) {
      /* The common answer without four stringify calls: a fifth of a small call's CPU time.
         Joined, never added: a long sum is a rope string, which the binding cannot return. */
      return ['{"ok":true,"value":', value, ',"logs":[],"emits":[],"state_writes":{},"state_ttls":{}}'].join("");
    }
    /* entries_* only when the call used host.entries: every other answer stays as it was */
    var entries = out.entries_added.length === 0 && !out.entries_read ? "" :
      [',"entries_added":', stringify(out.entries_added), ',"entries_read":', out.entries_read ? "true" : "false"].join("");
    return ['{"ok":true,"value":', value, ',"logs":', stringify(out.logs), ',"emits":', stringify(out.emits),
      ',"state_writes":', stringify(out.state_writes), ',"state_ttls":', stringify(out.state_ttls), entries, "}"].join("");
  }

  /* The whole request as one JSON line (config included, parsed anew every call). */
  function call(line, limitsJSON) {
    var L = limitsOf(limitsJSON);
    return run(function () { var req = parse(line); req.limits = L; return req; }, false);
  }

  /* The event as its own JSON text (parsed only here), the config by key (see setConfig). */
  function callKeyed(eventText, name, configKey, stateText, limitsJSON, entriesText) {
    if (!configs.has(configKey)) { fail("call", "no config is loaded for this call"); }
    var config = configs.get(configKey), L = limitsOf(limitsJSON);
    return run(function () {
      return { function: name, event: parse(eventText), config: configOf(config), state: parse(stateText), limits: L,
        entries: entriesText === undefined ? null : parse(entriesText) };
    }, false);
  }

  /* Frozen plain copies of the values a script's top level computed, or null where a copy could
     behave differently from the original or carry state: a function (a closure may hold
     mutable variables), a getter or setter, any object but a plain object, an array or a regex
     without g/y (Map, Set, typed arrays, class instances... and, when ``objects`` is false, any
     object at all). Built-ins (``Object.prototype.hasOwnProperty``, ``Math``...) are kept as
     they are: they were frozen above and every call shares them anyway. The copies are made here, from own data properties only, so whatever the
     top level built, what calls share is plain data this file created and froze; sharing and
     cycles between the values are kept. */
  var NOPE = freeze({}), RegExpProto = RegExp.prototype, reSource = gopd(RegExpProto, "source").get;
  var reFlags = [["d", "hasIndices"], ["g", "global"], ["i", "ignoreCase"], ["m", "multiline"], ["s", "dotAll"],
    ["u", "unicode"], ["v", "unicodeSets"], ["y", "sticky"]].filter(function (f) { return gopd(RegExpProto, f[1]) !== undefined; })
    .map(function (f) { return [f[0], gopd(RegExpProto, f[1]).get]; });
  var objectTag = ObjProto.toString, PLAIN_TAGS = ["[object Object]", "[object Array]", "[object RegExp]"];
  function regexCopy(v, keys) {
    var flags = "", source;
    try {
      source = reSource.call(v);
      for (var i = 0; i < reFlags.length; i++) { if (reFlags[i][1].call(v)) { flags += reFlags[i][0]; } }
    } catch (e) { throw NOPE; }
    var d = gopd(v, "lastIndex");
    if (flags.indexOf("g") >= 0 || flags.indexOf("y") >= 0 || keys.length !== 1 || d === undefined || d.value !== 0) { throw NOPE; }
    return freeze(new RegExpCtor(source, flags));
  }
  function keep(values, objects) {
    var copies = new Map(), todo = [];
    function copyOf(v) {
      if (v === null || (typeof v !== "object" && typeof v !== "function") || realm.has(v)) { return v; }
      if (typeof v === "function" || !objects) { throw NOPE; }
      var c = copies.get(v);
      if (c !== undefined) { return c; }
      var p = getProto(v), keys = ownKeys(v);
      if (PLAIN_TAGS.indexOf(objectTag.call(v)) < 0) { throw NOPE; }
      if (p === RegExpProto) { c = regexCopy(v, keys); copies.set(v, c); return c; }
      if (isArray(v)) {
        if (p !== ArrProto) { throw NOPE; }
        c = [];
        c.length = v.length;
      } else if (p === ObjProto || p === null) {
        c = p === null ? create(null) : {};
      } else { throw NOPE; }
      copies.set(v, c);
      todo.push([v, c, keys]);
      return c;
    }
    try {
      var root = copyOf(values);
      while (todo.length) {
        var t = todo.pop(), from = t[0], to = t[1], keys = t[2];
        for (var i = 0; i < keys.length; i++) {
          if (keys[i] === "length" && isArray(from)) { continue; }
          var d = gopd(from, keys[i]);
          if (d === undefined || !("value" in d)) { throw NOPE; }
          defineProperty(to, keys[i], { value: copyOf(d.value), enumerable: d.enumerable, writable: true, configurable: true });
        }
        freeze(to);
      }
      return root;
    } catch (e) {
      if (e === NOPE) { return null; }
      throw e;
    }
  }
  /* ``valuesWrapped`` runs the top level once and returns its constants; ``bodyWrapped`` takes
     their kept copies. The constants a body binds are frozen, so a call can read them but not
     change them; everything else it makes (its functions included) is new each call. */
  function runOnce(valuesWrapped, bodyWrapped, objects) {
    var copies = keep(indirectEval(valuesWrapped)(), objects), made;
    if (copies === null) { return "refused"; }
    /* The body only rebinds names the source declares; should it not compile (a name written
       with escapes that clashes with the parameter), the top level runs every call instead. */
    try { made = indirectEval(bodyWrapped); } catch (e) { return "refused"; }
    freeze(made);
    freeze(made.prototype);
    body = made;
    kept = copies;
    return "once";
  }

  /* ``wrapped`` is "(function () {"use strict";<source>\n;return {on_x: ...};})", made by the
     worker from a source that already parsed on its own as a strict Script, so it cannot close
     the function early. Strict code has no ``arguments.callee``, no ``with`` and an undefined
     ``this``: nothing in the source can reach the wrapper, which is frozen anyway.
     Evaluating it only parses; with ``trial`` the top-level code runs once (at load time) and
     the names of the on_<point> functions it defines come back. With ``valuesWrapped`` (a
     script jsscope.py found eligible) the top level runs once here and its constants are kept
     (see keep); ``once`` says whether they were. */
  function prepare(wrapped, withHost, withRegex, trial, valuesWrapped, bodyWrapped, objects) {
    try {
      script = indirectEval(wrapped);
      body = null;
      kept = null;
      /* The wrapper outlives the call: nothing may be parked on it or its prototype. */
      freeze(script);
      freeze(script.prototype);
      if (withHost || withRegex) { hostLib(); }
      if (withRegex) { lib.engine().pin(literalsOf(wrapped)); }
      var once = valuesWrapped === null ? "no" : runOnce(valuesWrapped, bodyWrapped, objects);
      if (!trial) { return stringify({ ok: true, once: once, functions: [] }); }
      var fns = kept === null ? script() : body(kept);
      return stringify({ ok: true, once: once, functions: Object.keys(fns).filter(function (k) { return typeof fns[k] === "function"; }) });
    } catch (e) { script = null; body = null; kept = null; return stringify({ ok: false, error: describe(e) }); }
  }

  /* The string literals written in a source (quoted with " or ', on one line), for the
     pattern engine to compile once per context (regex.js pin): a function of the source
     alone. A quote in a comment or a literal with escapes JSON lacks only adds a string no
     call asks for, or leaves one out: either way calls answer the same. */
  var LITERALS = "\"(?:[^\"\\\\\\n]|\\\\.)*\"|'(?:[^'\\\\\\n]|\\\\.)*'";
  function literalsOf(source) {
    var re = new RegExpCtor(LITERALS, "g"), found = [], m, text;
    while ((m = re.exec(source)) !== null && found.length < 4096) {
      text = m[0];
      if (text.charAt(0) === "'") { text = "\"" + text.slice(1, -1).split("\\'").join("'").split("\"").join("\\\"") + "\""; }
      try { found.push(parse(text)); } catch (e) { /* not JSON: left out */ }
    }
    return found;
  }

  /* host.match/redact for Python scripts, in a context of their own (see freshPatterns). */
  function regexOp(line) {
    var req = parse(line);
    try {
      var engine = hostLib().engine();
      var r = req.op === "match" ? engine.match(req.pattern, req.text) : engine.redact(req.text, req.patterns, req.replacement);
      return stringify({ ok: true, value: r });
    } catch (e) { return stringify({ ok: false, error: describe(e) }); }
  }
  /* The runtime's table of shapes grows, and never shrinks, once more objects with distinct
     prototypes are alive at once than it has room for (each such object has a hashed shape).
     A call makes about 30 (its functions, class instances, typed arrays): near the table's
     first size, so a call that made a few more would grow it, once, and leave that in memory
     (test_fresh_state.py checks a call's memory to the byte). Grown here to 256 slots (2 KB),
     the same for every script, no ordinary call grows it: 100 objects, each with a
     prototype of its own, all alive at once. */
  (function () {
    var live = [];
    for (var i = 0; i < 100; i++) { live.push(create({})); }
  })();
  return freeze({ call: call, callKeyed: callKeyed, config: setConfig, prepare: prepare, regex: regexOp, fresh: freshPatterns });
})(globalThis);
