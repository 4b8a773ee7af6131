/* hookengine prelude: runs in every fresh QuickJS context before user code. It must stay small:
   QuickJS parses ~25 KB/ms and every call gets a new context. Host API calls never leave JS,
   because the binding refuses Python callbacks while a time limit is set. */
globalThis.__he = (function (g) {
  "use strict";
  var indirectEval = g.eval, parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze;
  var isArray = Array.isArray, getProto = Object.getPrototypeOf, hasOwn = Object.prototype.hasOwnProperty;
  var ObjProto = Object.prototype, ArrProto = Array.prototype, hostSource = g.__heHost, regexSource = g.__heRegex, factory = null, impl = null;

  function noStrings() { throw new EvalError("code from strings is not allowed"); }
  /* No clocks, randomness or code from strings: the Python policy forbids the same. */
  [Function.prototype, getProto(function* () {}), getProto(async function () {}),
   getProto(async function* () {})].forEach(function (p) {
    Object.defineProperty(p, "constructor", { value: noStrings });
  });
  ["eval", "Date", "performance", "WeakRef", "FinalizationRegistry", "SharedArrayBuffer",
   "Atomics", "queueMicrotask", "__heHost", "__heRegex"].forEach(function (k) { delete g[k]; });
  g.Function = noStrings;
  Math.random = function random() { throw new TypeError("Math.random is not available"); };
  /* Freeze every built-in and its prototype before user code, so a script cannot poison what
     this wrapper uses (JSON, Object.prototype, Error.prototype.toString...). */
  Reflect.ownKeys(g).forEach(function (k) {
    var v = g[k];
    if (k === "globalThis" || k === "__he" || k === "__heHost" || k === "__heRegex" || v === null || (typeof v !== "object" && typeof v !== "function")) { return; }
    freeze(v);
    if (v.prototype) { freeze(v.prototype); }
  });
  [ObjProto, ArrProto, getProto(function* () {}), getProto(getProto([][Symbol.iterator]())),
   getProto(async function () {}), getProto(Int8Array), getProto(Int8Array.prototype)]
    .forEach(freeze);

  function fail(where, msg) { throw new TypeError(where + ": " + msg); }
  function invalid(msg, mark) { var e = new TypeError(msg); if (mark) { e.heInvalid = true; } return e; }
  /* JSON.stringify runs getters, Proxies and toJSON here, inside the time limit; the replacer
     refuses anything that is not plain JSON, and the depth cap also stops cycles early. */
  function toJSON(value, maxDepth, maxChars, where, mark) {
    var depth = new Map();
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
      if (isArray(v) ? p !== ArrProto : (p !== ObjProto && p !== null)) { throw invalid(where + ": only plain objects and arrays are JSON", mark); }
      if (d >= maxDepth) { throw invalid(where + ": nested deeper than " + maxDepth + " levels", mark); }
      depth.set(v, d);
      return v;
    });
    if (s === undefined) { throw invalid(where + ": not JSON", mark); }
    if (s.length > maxChars) { throw invalid(where + ": larger than " + maxChars + " bytes", mark); }
    return s;
  }
  /* The host API is parsed on first use (QuickJS parses ~20 KB/ms and a guard that only reads
     host.config should not pay for it); host.js gets the helpers it shares with this file. */
  function api(req, out) {
    if (factory === null) {
      factory = indirectEval(hostSource)({ eval: indirectEval, toJSON: toJSON, fail: fail, regexSource: regexSource });
    }
    if (impl === null) { impl = factory(req, out); }
    return impl;
  }
  function makeHost(req, out) {
    function lazy(name) { return function () { return api(req, out)[name].apply(undefined, arguments); }; }
    return freeze({ config: req.config, log: lazy("log"), now: lazy("now"), emit: lazy("emit"),
      match: lazy("match"), redact: lazy("redact"), state: freeze({ get: lazy("get"), set: lazy("set") }) });
  }

  function describe(e) {
    var out = { type: "Error", message: "", stack: "", invalid: false };
    try {
      if (e !== null && typeof e === "object") {
        out.type = typeof e.name === "string" ? e.name.slice(0, 100) : "Error";
        out.message = typeof e.message === "string" ? e.message.slice(0, 1000) : "";
        out.stack = typeof e.stack === "string" ? e.stack.slice(0, 2000) : "";
        out.invalid = e.heInvalid === true;
      } else { out.message = "script threw a non-Error value (" + typeof e + ")"; }
    } catch (inner) { out.message = "script threw an unreadable value"; }
    return out;
  }

  function call(line) {
    var req = parse(line), L = req.limits;
    var out = { logs: [], dropped_logs: 0, emits: [], state_writes: {} };
    var fn = hasOwn.call(g, req.function) ? g[req.function] : undefined;
    try {
      if (typeof fn !== "function") { fail("call", "the script defines no function " + req.function); }
      var raw = fn(req.event, makeHost(req, out));
      if (raw !== null && typeof raw === "object" && typeof raw.then === "function") { throw invalid("result: async functions and promises are not supported", true); }
      if (raw !== undefined && raw !== null && (typeof raw !== "object" || isArray(raw))) { throw invalid("result: must be null or a plain object, not " + (isArray(raw) ? "an array" : typeof raw), true); }
      try {
        out.value = raw === undefined ? "null" : toJSON(raw, L.max_depth, L.max_result_bytes, "result", true);
      } catch (e) {
        if (e instanceof TypeError && !e.heInvalid && /circular/i.test(e.message)) { throw invalid("result: contains a cycle", true); }
        throw e;
      }
    } catch (e) {
      return stringify({ ok: false, error: describe(e), uses_host: impl !== null });
    }
    out.ok = true;
    out.uses_host = impl !== null;
    return stringify(out);
  }

  function load(source, withHost) {
    if (withHost) { factory = indirectEval(hostSource)({ eval: indirectEval, toJSON: toJSON, fail: fail, regexSource: regexSource }); }
    try { indirectEval(source); } catch (e) { return stringify({ ok: false, error: describe(e) }); }
    return stringify({ ok: true, functions: Object.keys(g).filter(function (k) { return k.slice(0, 3) === "on_" && typeof g[k] === "function"; }) });
  }

  function regexOp(line) {
    var req = parse(line);
    try {
      var engine = api(req, {}).engine();
      var r = req.op === "match" ? engine.match(req.pattern, req.text) : engine.redact(req.text, req.patterns, req.replacement);
      return stringify({ ok: true, value: r });
    } catch (e) { return stringify({ ok: false, error: describe(e) }); }
  }
  return freeze({ call: call, load: load, regex: regexOp });
})(globalThis);
