/* hookengine host API for JavaScript scripts; parsed on a context's first host call.
   Same names, arguments, checks and messages as guards.Host for Python scripts. */
(function (h) {
  "use strict";
  var parse = JSON.parse, stringify = JSON.stringify, isArray = Array.isArray;
  var hasOwn = Object.prototype.hasOwnProperty, fail = h.fail, regex = null;
  var EMIT_TYPES = ["status", "message", "citation"];
  var MAX_STATE_TTL_S = 315360000; /* ten years: guards.MAX_STATE_TTL_S */

  function checkText(where, name, v, max) {
    if (typeof v !== "string") { fail(where, name + " must be a string"); }
    if (v.length > max) { fail(where, name + " is longer than " + max + " characters"); }
  }
  /* A name the store keeps (a state key, an entry's kind) must be whole Unicode text: a lone
     surrogate cannot be stored, and replacing it would merge names (guards._whole_text). */
  function wholeText(where, name, v) {
    for (var i = 0; i < v.length; i++) {
      var c = v.charCodeAt(i);
      if (c < 0xd800 || c > 0xdfff) { continue; }
      if (c < 0xdc00 && i + 1 < v.length) {
        var d = v.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
      }
      fail(where, name + " holds half of a character (a lone surrogate \\u" + c.toString(16) + " at index " + i +
        "); was a text cut in the middle of a character?");
    }
  }
  function utf8(s) {
    var n = 0;
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      n += c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) ? (i++, 4) : 3;
    }
    return n;
  }
  /* A value handed to the host as a fresh copy, within ``max`` bytes of compact UTF-8 JSON,
     as guards._plain_copy measures it: toJSON counts characters, and one character is up to
     three bytes (a state value of 16,384 euro signs passed as 16,384 "bytes"). */
  function copied(v, L, max, where) {
    var s = h.toJSON(v, L.max_depth, max, where);
    if (s.length * 3 > max && utf8(s) > max) { fail(where, "larger than " + max + " bytes"); }
    return parse(s);
  }
  function engine() {
    if (regex === null) { regex = h.eval(h.regexSource); }
    return regex;
  }

  function reset() { if (regex !== null) { regex.reset(); } }

  function ttlOf(opts) {
    if (opts === undefined || opts === null) { return null; }
    if (typeof opts !== "object" || isArray(opts)) { fail("host.state.set", "options must be an object {ttl_s}"); }
    var keys = Object.keys(opts);
    if (keys.length !== 1 || keys[0] !== "ttl_s") { fail("host.state.set", "options take only ttl_s"); }
    var t = opts.ttl_s;
    if (t === null || t === undefined) { return null; }
    if (typeof t !== "number" || !isFinite(t) || !(t > 0 && t <= MAX_STATE_TTL_S)) {
      fail("host.state.set", "ttl_s must be a number of seconds > 0 and <= " + MAX_STATE_TTL_S);
    }
    return t;
  }

  function makeApi(req, out) {
    var L = req.limits, state = req.state, writes = out.state_writes, ttls = out.state_ttls;
    function key(k) {
      checkText("host.state", "key", k, L.max_state_key_chars);
      if (k.length === 0) { fail("host.state", "key must not be empty"); }
      wholeText("host.state", "key", k);
    }
    function live(k) { return hasOwn.call(writes, k) ? writes[k] !== null : hasOwn.call(state, k) && state[k] !== null; }
    function count() {
      var n = 0, k;
      for (k in state) { if (hasOwn.call(state, k) && live(k)) { n++; } }
      for (k in writes) { if (hasOwn.call(writes, k) && !hasOwn.call(state, k) && live(k)) { n++; } }
      return n;
    }
    var added = out.entries_added;
    function entryKind(where, k) {
      checkText(where, "kind", k, L.max_entry_kind_chars);
      if (k.length === 0) { fail(where, "kind must not be empty"); }
      wholeText(where, "kind", k);
    }
    function conversation(where) {
      if (req.entries === null || req.entries === undefined) { fail(where, "this call has no conversation (the event has no session_id)"); }
    }
    function lastOf(opts) {
      var n = opts;
      if (opts !== null && typeof opts === "object" && !isArray(opts)) {
        var keys = Object.keys(opts);
        if (keys.length !== 1 || keys[0] !== "last") { fail("host.entries.list", "options take only last"); }
        n = opts.last;
      }
      if (n === undefined || n === null) { return null; }
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) { fail("host.entries.list", "last must be a whole number >= 0 or None"); }
      return n;
    }
    return {
      entriesAdd: function add(k, data) {
        entryKind("host.entries.add", k);
        conversation("host.entries.add");
        if (data === undefined) { fail("host.entries.add", "data must be JSON"); }
        var v = copied(data, L, L.max_entry_bytes, "host.entries.add: data");
        if (added.length >= L.max_entry_adds) { fail("host.entries.add", "more than " + L.max_entry_adds + " entries"); }
        added.push({ kind: k, data: v });
        return null;
      },
      entriesList: function list(k, opts) {
        entryKind("host.entries.list", k);
        var last = lastOf(opts), found = [], all = [], i;
        conversation("host.entries.list");
        out.entries_read = true;
        for (i = 0; i < req.entries.length; i++) { all.push(req.entries[i]); }
        for (i = 0; i < added.length; i++) { all.push(added[i]); }
        for (i = 0; i < all.length; i++) {
          if (all[i].kind === k) { found.push({ data: all[i].data, turn: hasOwn.call(all[i], "turn") ? all[i].turn : null }); }
        }
        if (last !== null) { found = last === 0 ? [] : found.slice(Math.max(0, found.length - last)); }
        return parse(stringify(found));
      },
      log: function log(msg) {
        checkText("host.log", "msg", msg, L.max_text_chars);
        if (out.logs.length >= L.max_log_lines) { out.dropped_logs++; return null; }
        out.logs.push(msg.length > L.max_log_chars ? msg.slice(0, L.max_log_chars) + "…" : msg);
        return null;
      },
      now: function now() { return hasOwn.call(req.event, "time") ? req.event.time : null; },
      emit: function emit(ev) {
        if (ev === null || typeof ev !== "object" || isArray(ev)) { fail("host.emit", "event must be an object {type, data}"); }
        var e = copied(ev, L, L.max_emit_bytes, "host.emit: event");
        var keys = Object.keys(e);
        if (keys.length !== 2 || !hasOwn.call(e, "type") || !hasOwn.call(e, "data")) { fail("host.emit", "event must have exactly the keys type and data"); }
        if (EMIT_TYPES.indexOf(e.type) < 0) { fail("host.emit", "type must be one of status, message, citation"); }
        if (e.data === null || typeof e.data !== "object" || isArray(e.data)) { fail("host.emit", "data must be an object"); }
        if (out.emits.length >= L.max_emits) { fail("host.emit", "more than " + L.max_emits + " events"); }
        out.emits.push(e);
        return null;
      },
      add_artifact: function add_artifact(name, text, mime) {
        if (req.function !== "run") { fail("host.add_artifact", "only a tool's run(input, host) may add artifacts"); }
        if (mime === undefined) { mime = "text/plain"; }
        checkText("host.add_artifact", "name", name, 200);
        checkText("host.add_artifact", "text", text, L.max_text_chars);
        checkText("host.add_artifact", "mime", mime, 100);
        if (utf8(text) > L.max_artifact_bytes) { fail("host.add_artifact", "text is larger than " + L.max_artifact_bytes + " bytes"); }
        var made = 0;
        for (var i = 0; i < out.emits.length; i++) { if (out.emits[i].type === "artifact") { made++; } }
        if (made >= L.max_artifacts) { fail("host.add_artifact", "more than " + L.max_artifacts + " artifacts"); }
        out.emits.push({ type: "artifact", data: { name: name, text: text, mime: mime } });
        return null;
      },
      match: function match(pattern, text) {
        checkText("host.match", "pattern", pattern, L.max_pattern_chars);
        checkText("host.match", "text", text, L.max_text_chars);
        return engine().match(pattern, text);
      },
      redact: function redact(text, patterns, replacement) {
        checkText("host.redact", "text", text, L.max_text_chars);
        if (!isArray(patterns)) { fail("host.redact", "patterns must be a list of strings"); }
        /* read once each, length and patterns: a getter or a Proxy answers anew on every read,
           and what is checked must be what the pattern engine gets */
        var n = +patterns.length, ps = [];
        if (n > L.max_patterns) { fail("host.redact", "more than " + L.max_patterns + " patterns"); }
        for (var i = 0; i < n; i++) {
          var p = patterns[i];
          checkText("host.redact", "pattern", p, L.max_pattern_chars);
          ps.push(p);
        }
        if (replacement === undefined) { replacement = "[REDACTED]"; }
        checkText("host.redact", "replacement", replacement, L.max_pattern_chars);
        return engine().redact(text, ps, replacement);
      },
      get: function get(k) {
        key(k);
        return live(k) ? parse(stringify(hasOwn.call(writes, k) ? writes[k] : state[k])) : null;
      },
      set: function set(k, value, opts) {
        key(k);
        var ttl = ttlOf(opts);
        if (value === undefined) { fail("host.state.set", "value must be JSON (null deletes)"); }
        var v = copied(value, L, L.max_state_value_bytes, "host.state.set: value");
        if (v === null && !(hasOwn.call(state, k) && state[k] !== null)) {
          /* deleting a key the store does not hold writes nothing: a call's writes stay
             bounded by twice max_state_keys (guards.HostState.set) */
          delete writes[k];
          delete ttls[k];
          return null;
        }
        if (v !== null && !live(k) && count() >= L.max_state_keys) { fail("host.state.set", "more than " + L.max_state_keys + " keys"); }
        Object.defineProperty(writes, k, { value: v, enumerable: true, writable: true, configurable: true });
        if (ttl === null || v === null) { delete ttls[k]; }
        else { Object.defineProperty(ttls, k, { value: ttl, enumerable: true, writable: true, configurable: true }); }
        return null;
      }
    };
  }
  return { api: makeApi, engine: engine, reset: reset };
})
