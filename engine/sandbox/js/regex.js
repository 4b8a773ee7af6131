/* hookengine: the one pattern engine behind host.match and host.redact, for both languages.
   A Thompson-NFA / Pike VM: time O(text x program), no backtracking, leftmost-first like RE2.
   Written in JS so that Python and JavaScript scripts get byte-identical semantics. */
(function () {
  "use strict";
  var CHAR = 0, ANY = 1, SPLIT = 2, JMP = 3, ASSERT = 4, MATCH = 5;
  var MAX_REPEAT = 1000, MAX_PROGRAM = 20000;
  var DIGIT = [[48, 57]], WORD = [[48, 57], [65, 90], [95, 95], [97, 122]];
  var SPACE = [[9, 13], [32, 32]];

  function fail(msg) { throw new SyntaxError("invalid pattern: " + msg); }

  function Parser(src) { this.s = src; this.i = 0; this.fold = false; }
  Parser.prototype.peek = function () { return this.s.charAt(this.i); };
  Parser.prototype.more = function () { return this.i < this.s.length; };

  Parser.prototype.parseAlt = function (depth) {
    if (depth > 100) { fail("groups nested too deeply"); }
    var alts = [this.parseConcat(depth)];
    while (this.peek() === "|") { this.i++; alts.push(this.parseConcat(depth)); }
    return alts.length === 1 ? alts[0] : { t: "alt", alts: alts };
  };
  Parser.prototype.parseConcat = function (depth) {
    var items = [];
    while (this.more() && this.peek() !== "|" && this.peek() !== ")") {
      items.push(this.parseRepeat(depth));
    }
    return { t: "cat", items: items };
  };
  Parser.prototype.parseRepeat = function (depth) {
    var atom = this.parseAtom(depth), c = this.peek(), min, max;
    if (c === "*") { min = 0; max = -1; } else if (c === "+") { min = 1; max = -1; }
    else if (c === "?") { min = 0; max = 1; } else if (c === "{") {
      var m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(this.s.slice(this.i));
      if (!m) { fail("'{' must start a repetition like {2,5} (write \\{ for a brace)"); }
      min = +m[1]; max = m[2] === undefined ? min : (m[3] === "" ? -1 : +m[3]);
      if (min > MAX_REPEAT || max > MAX_REPEAT) { fail("repetition count above " + MAX_REPEAT); }
      if (max >= 0 && max < min) { fail("repetition {" + min + "," + max + "} is empty"); }
      this.i += m[0].length - 1;
    } else { return atom; }
    this.i++;
    var lazy = false;
    if (this.peek() === "?") { lazy = true; this.i++; }
    var n = this.peek();
    if (n === "*" || n === "+" || n === "?" || n === "{") { fail("repeated repetition"); }
    if (atom.t === "assert") { fail("nothing to repeat"); }
    return { t: "rep", x: atom, min: min, max: max, lazy: lazy };
  };
  Parser.prototype.parseAtom = function (depth) {
    var c = this.peek();
    this.i++;
    if (c === "(") {
      if (this.peek() === "?") {
        if (this.s.charAt(this.i + 1) !== ":") { fail("only (?:...) groups and a leading (?i) are supported"); }
        this.i += 2;
      }
      var inner = this.parseAlt(depth + 1);
      if (this.peek() !== ")") { fail("missing )"); }
      this.i++;
      return inner;
    }
    if (c === ")") { fail("unbalanced )"); }
    if (c === "[") { return this.parseClass(); }
    if (c === ".") { return { t: "any" }; }
    if (c === "^") { return { t: "assert", k: "^" }; }
    if (c === "$") { return { t: "assert", k: "$" }; }
    if (c === "*" || c === "+" || c === "?") { fail("nothing to repeat"); }
    if (c === "{") { fail("nothing to repeat"); }
    if (c === "\\") { return this.parseEscape(false); }
    return { t: "char", r: [[c.charCodeAt(0), c.charCodeAt(0)]], neg: false };
  };
  Parser.prototype.parseEscape = function (inClass) {
    if (!this.more()) { fail("trailing backslash"); }
    var c = this.s.charAt(this.i++), code;
    if (c === "d" || c === "D") { return { t: "char", r: DIGIT, neg: c === "D" }; }
    if (c === "w" || c === "W") { return { t: "char", r: WORD, neg: c === "W" }; }
    if (c === "s" || c === "S") { return { t: "char", r: SPACE, neg: c === "S" }; }
    if (!inClass && (c === "b" || c === "B")) { return { t: "assert", k: c }; }
    var simple = { n: 10, r: 13, t: 9, f: 12, v: 11 };
    if (Object.prototype.hasOwnProperty.call(simple, c)) { code = simple[c]; }
    else if (c === "x" || c === "u") {
      var len = c === "x" ? 2 : 4, hex = this.s.slice(this.i, this.i + len);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) { fail("bad \\" + c + " escape"); }
      code = parseInt(hex, 16); this.i += len;
    } else if (/[A-Za-z0-9]/.test(c)) { fail("unsupported escape \\" + c); }
    else { code = c.charCodeAt(0); }
    return { t: "char", r: [[code, code]], neg: false };
  };
  Parser.prototype.parseClass = function () {
    var neg = false, ranges = [], first = true;
    if (this.peek() === "^") { neg = true; this.i++; }
    while (true) {
      if (!this.more()) { fail("missing ]"); }
      var c = this.s.charAt(this.i);
      if (c === "]" && !first) { this.i++; break; }
      first = false;
      var lo;
      if (c === "\\") {
        this.i++;
        var e = this.parseEscape(true);
        if (e.neg) { fail("negated class escapes (\\D \\W \\S) inside [...] are not supported"); }
        if (e.r.length > 1 || e.r[0][0] !== e.r[0][1]) { ranges = ranges.concat(e.r); continue; }
        lo = e.r[0][0];
      } else { lo = c.charCodeAt(0); this.i++; }
      var hi = lo;
      if (this.peek() === "-" && this.s.charAt(this.i + 1) !== "]" && this.i + 1 < this.s.length) {
        this.i++;
        var d = this.s.charAt(this.i);
        if (d === "\\") { this.i++; var e2 = this.parseEscape(true); if (e2.r.length > 1 || e2.r[0][0] !== e2.r[0][1]) { fail("bad range"); } hi = e2.r[0][0]; }
        else { hi = d.charCodeAt(0); this.i++; }
        if (hi < lo) { fail("range out of order"); }
      }
      ranges.push([lo, hi]);
    }
    return { t: "char", r: ranges, neg: neg };
  };

  function Program() { this.op = []; this.a = []; this.b = []; this.cls = []; }
  Program.prototype.emit = function (op, a, b, cls) {
    if (this.op.length >= MAX_PROGRAM) { fail("pattern too large"); }
    this.op.push(op); this.a.push(a); this.b.push(b); this.cls.push(cls);
    return this.op.length - 1;
  };

  function fold(ranges) {
    var out = ranges.slice();
    for (var i = 0; i < ranges.length; i++) {
      var lo = Math.max(ranges[i][0], 65), hi = Math.min(ranges[i][1], 90);
      if (lo <= hi) { out.push([lo + 32, hi + 32]); }
      lo = Math.max(ranges[i][0], 97); hi = Math.min(ranges[i][1], 122);
      if (lo <= hi) { out.push([lo - 32, hi - 32]); }
    }
    return out;
  }

  function gen(node, p, ci) {
    var i, L;
    switch (node.t) {
      case "char": p.emit(CHAR, 0, 0, { r: ci ? fold(node.r) : node.r, neg: node.neg }); return;
      case "any": p.emit(ANY, 0, 0, null); return;
      case "assert": p.emit(ASSERT, node.k, 0, null); return;
      case "cat": for (i = 0; i < node.items.length; i++) { gen(node.items[i], p, ci); } return;
      case "alt": {
        var jumps = [];
        for (i = 0; i < node.alts.length - 1; i++) {
          L = p.emit(SPLIT, 0, 0, null);
          p.a[L] = L + 1; gen(node.alts[i], p, ci);
          jumps.push(p.emit(JMP, 0, 0, null)); p.b[L] = p.op.length;
        }
        gen(node.alts[node.alts.length - 1], p, ci);
        for (i = 0; i < jumps.length; i++) { p.a[jumps[i]] = p.op.length; }
        return;
      }
      case "rep": {
        for (i = 0; i < node.min; i++) { gen(node.x, p, ci); }
        if (node.max < 0) {
          L = p.emit(SPLIT, 0, 0, null); gen(node.x, p, ci); p.emit(JMP, L, 0, null);
          setSplit(p, L, L + 1, p.op.length, node.lazy);
        } else {
          var ends = [];
          for (i = node.min; i < node.max; i++) {
            L = p.emit(SPLIT, 0, 0, null); ends.push(L); gen(node.x, p, ci);
            p.a[L] = L + 1;
          }
          for (i = 0; i < ends.length; i++) { setSplit(p, ends[i], ends[i] + 1, p.op.length, node.lazy); }
        }
        return;
      }
    }
  }
  function setSplit(p, at, body, out, lazy) { p.a[at] = lazy ? out : body; p.b[at] = lazy ? body : out; }

  function compile(src) {
    var ps = new Parser(src), ci = false;
    if (src.slice(0, 4) === "(?i)") { ci = true; ps.i = 4; }
    var ast = ps.parseAlt(0);
    if (ps.more()) { fail("unbalanced )"); }
    var p = new Program();
    gen(ast, p, ci);
    p.emit(MATCH, 0, 0, null);
    var size = p.op.length;
    /* The marks, two thread lists (pc, start) and the closure's stack, made once per
       program: a search allocates nothing per step. A list holds each pc at most once
       (mark); the stack takes at most two pushes per pc expanded, and each pc is expanded
       once per step. */
    p.mark = new Int32Array(size);
    p.stamp = 0;
    p.pcs = [new Int32Array(size), new Int32Array(size)];
    p.starts = [new Int32Array(size), new Int32Array(size)];
    p.stack = new Int32Array(2 * size + 2);
    p.prefix = ci ? "" : prefixOf(ast);
    return p;
  }

  /* The text every match starts with, when the pattern begins with plain characters (the
     first ops of the program are then those CHARs, with no SPLIT before them): a search with
     no live thread jumps to its next occurrence with indexOf instead of starting a thread at
     every position. */
  function prefixOf(node) {
    var out = [];
    prefixInto(node, out);
    return out.join("");
  }
  /* Appends the node's leading plain characters to ``out``; whether what follows the node
     may still add to the prefix. (A plain function, not a closure: a recursive closure is a
     cycle only the collector frees.) */
  function prefixInto(n, out) {
    if (n.t === "char") {
      if (n.neg || n.r.length !== 1 || n.r[0][0] !== n.r[0][1]) { return false; }
      out.push(String.fromCharCode(n.r[0][0]));
      return true;
    }
    if (n.t === "cat") {
      for (var i = 0; i < n.items.length; i++) { if (!prefixInto(n.items[i], out)) { return false; } }
      return true;
    }
    if (n.t === "rep" && n.min >= 1) { prefixInto(n.x, out); }
    return false;
  }

  function inClass(cls, c) {
    var r = cls.r, hit = false;
    for (var k = 0; k < r.length; k++) { if (c >= r[k][0] && c <= r[k][1]) { hit = true; break; } }
    return hit !== cls.neg;
  }
  function isWord(text, i) {
    if (i < 0 || i >= text.length) { return false; }
    var c = text.charCodeAt(i);
    return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || c === 95 || (c >= 97 && c <= 122);
  }
  function holds(k, text, i) {
    if (k === "^") { return i === 0; }
    if (k === "$") { return i === text.length; }
    var edge = isWord(text, i - 1) !== isWord(text, i);
    return k === "b" ? edge : !edge;
  }

  // Adds the epsilon closure of pc (in priority order) to a thread list (pcs, starts, at n);
  // mark[] dedups per step. Returns the list's new length.
  function addThread(p, pcs, starts, n, pc0, start, text, pos) {
    var stack = p.stack, top = 0, mark = p.mark, stamp = p.stamp, ops = p.op;
    stack[top++] = pc0;
    while (top > 0) {
      var pc = stack[--top];
      if (mark[pc] === stamp) { continue; }
      mark[pc] = stamp;
      var op = ops[pc];
      if (op === JMP) { stack[top++] = p.a[pc]; }
      else if (op === SPLIT) { stack[top++] = p.b[pc]; stack[top++] = p.a[pc]; }
      else if (op === ASSERT) { if (holds(p.a[pc], text, pos)) { stack[top++] = pc + 1; } }
      else { pcs[n] = pc; starts[n] = start; n++; }
    }
    return n;
  }

  function search(p, text, from) {
    var cpc = p.pcs[0], cst = p.starts[0], npc = p.pcs[1], nst = p.starts[1];
    var cn = 0, nn, swap, best = null, n = text.length, prefix = p.prefix, ops = p.op;
    if (p.stamp > 0x3fffffff) { p.mark.fill(0); p.stamp = 0; }  // a pinned program's, after many calls
    p.stamp++;
    for (var i = from; i <= n; i++) {
      if (best === null) {
        if (cn === 0 && prefix !== "") {  // no live thread: the next match starts at the prefix
          var next = text.indexOf(prefix, i);
          if (next < 0) { break; }
          i = next;
        }
        cn = addThread(p, cpc, cst, cn, 0, i, text, i);
      }
      // No live thread: done if a match was found; else a later start may still match.
      if (cn === 0) { if (best !== null) { break; } p.stamp++; continue; }
      var c = i < n ? text.charCodeAt(i) : -1;
      nn = 0;
      p.stamp++;
      for (var t = 0; t < cn; t++) {
        var pc = cpc[t], op = ops[pc];
        if (op === MATCH) { best = [cst[t], i]; break; }
        if (c < 0) { continue; }
        if ((op === CHAR && inClass(p.cls[pc], c)) || (op === ANY && c !== 10)) {
          nn = addThread(p, npc, nst, nn, pc + 1, cst[t], text, i + 1);
        }
      }
      swap = cpc; cpc = npc; npc = swap;
      swap = cst; cst = nst; nst = swap;
      cn = nn;
    }
    return best;
  }

  /* Patterns compiled when the context is prepared (pin), from the script's source alone:
     every context of a script starts with the same ones, so what a call finds compiled says
     nothing about earlier calls. Everything else is compiled in the call, into ``cache``. */
  var pinned = new Map(), PIN_MAX = 32, PIN_OPS = 2048, PIN_CHARS = 300;
  var META = /[\\\[\]()|*+?{}^$.]/;
  function pin(patterns) {
    var ops = 0;
    for (var i = 0; i < patterns.length && pinned.size < PIN_MAX; i++) {
      var s = patterns[i], p;
      if (typeof s !== "string" || s.length > PIN_CHARS || pinned.has(s) || !META.test(s)) { continue; }
      try { p = compile(s); } catch (e) { if (e instanceof SyntaxError) { continue; } throw e; }
      if (ops + p.op.length > PIN_OPS) { continue; }
      ops += p.op.length;
      pinned.set(s, p);
    }
    return pinned.size;
  }
  var cache = new Map();
  function program(pattern) {
    var p = pinned.get(pattern);
    if (p !== undefined) { return p; }
    p = cache.get(pattern);
    if (p === undefined) {
      p = compile(pattern);
      if (cache.size >= 256) { cache.clear(); }
      cache.set(pattern, p);
    }
    return p;
  }
  function match(pattern, text) { return search(program(pattern), text, 0) !== null; }
  function redact(text, patterns, replacement) {
    for (var k = 0; k < patterns.length; k++) {
      var p = program(patterns[k]), out = "", pos = 0, from = 0;
      while (from <= text.length) {
        var m = search(p, text, from);
        if (m === null) { break; }
        if (m[1] === m[0]) { from = m[0] + 1; continue; }
        out += text.slice(pos, m[0]) + replacement; pos = m[1]; from = m[1];
      }
      text = out + text.slice(pos);
    }
    return text;
  }
  /* A new map, not clear(): a cleared map keeps the table it grew, so a call could tell
     whether an earlier one compiled a pattern (the pinned ones aside, none compiles any). */
  function reset() { cache = new Map(); }
  return Object.freeze({ match: match, redact: redact, compile: compile, reset: reset, pin: pin });
})();
