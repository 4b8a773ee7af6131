/* hookengine: the one pattern engine behind host.match and host.redact, for both languages.
   A Thompson-NFA / Pike VM: time O(text x program), no backtracking, leftmost-first like RE2.
   Written in JS so that Python and JavaScript scripts get byte-identical semantics. */
(function () {
  "use strict";
  var CHAR = 0, ANY = 1, SPLIT = 2, JMP = 3, ASSERT = 4, MATCH = 5, ONE = 6;  // ONE: one code (a)
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

  /* Emits the ops of ``node``; ``classes`` maps each char node to its class, made once. */
  function gen(node, p, ci, classes) {
    var i, L;
    switch (node.t) {
      case "char": {
        var cls = classes.get(node);
        if (cls === undefined) { cls = charClass(node, ci); classes.set(node, cls); }
        if (cls.one >= 0) { p.emit(ONE, cls.one, 0, null); } else { p.emit(CHAR, 0, 0, cls); }
        return;
      }
      case "any": p.emit(ANY, 0, 0, null); return;
      case "assert": p.emit(ASSERT, node.k, 0, null); return;
      case "cat": for (i = 0; i < node.items.length; i++) { gen(node.items[i], p, ci, classes); } return;
      case "alt": {
        var jumps = [];
        for (i = 0; i < node.alts.length - 1; i++) {
          L = p.emit(SPLIT, 0, 0, null);
          p.a[L] = L + 1; gen(node.alts[i], p, ci, classes);
          jumps.push(p.emit(JMP, 0, 0, null)); p.b[L] = p.op.length;
        }
        gen(node.alts[node.alts.length - 1], p, ci, classes);
        for (i = 0; i < jumps.length; i++) { p.a[jumps[i]] = p.op.length; }
        return;
      }
      case "rep": {
        for (i = 0; i < node.min; i++) { gen(node.x, p, ci, classes); }
        if (node.max < 0) {
          L = p.emit(SPLIT, 0, 0, null); gen(node.x, p, ci, classes); p.emit(JMP, L, 0, null);
          setSplit(p, L, L + 1, p.op.length, node.lazy);
        } else {
          var ends = [];
          for (i = node.min; i < node.max; i++) {
            L = p.emit(SPLIT, 0, 0, null); ends.push(L); gen(node.x, p, ci, classes);
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
    gen(ast, p, ci, new Map());
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
    p.prefix = prefixOf(ast, ci);
    p.foldPrefix = ci;
    firstSet(p);
    p.native = nativeOf(ast, ci, "y");
    return p;
  }

  /* A native expression with the same matches, for a pattern a backtracking search runs in
     linear time: no repetition that can loop unbounded except one of a single class at the
     very end (a greedy run there has nothing after it to give characters back to; a start
     that fails reads fewer characters than its minimum), and at most NATIVE_WORK characters
     read per start over every way through the pattern (paths x longest match). Leftmost-first
     is what a backtracking search finds, so it answers as the program does, about a hundred
     times faster on script code's steps: a card-number pattern over an answer of 4 KB.
     Classes are written out code by code (case folding included: no ``i`` flag, whose
     folding is not ASCII), ``.`` as [^\n], and no ``u`` flag: both read UTF-16 code units,
     ``\b`` the same ASCII word characters, ``^`` and ``$`` the ends of the whole text. A
     repeated part that can match the empty text keeps the program: the two differ in how
     they end such a loop. */
  var NATIVE_WORK = 1024, SATURATED = 1 << 20;
  function nativeOf(ast, ci, flags) {
    var items = ast.t === "cat" ? ast.items : [ast], tail = "", tailMin = 0;
    var last = items.length > 0 ? items[items.length - 1] : null;
    if (last !== null && last.t === "rep" && last.max < 0 && (last.x.t === "char" || last.x.t === "any")) {
      tail = shapeOf(last.x, ci).src + "{" + last.min + ",}" + (last.lazy ? "?" : "");
      tailMin = last.min;
      items = items.slice(0, -1);
    }
    var head = shapeOf({ t: "cat", items: items }, ci);
    if (head === null || head.paths * (head.len + tailMin) > NATIVE_WORK) { return null; }
    return new RegExp(head.src + tail, flags);
  }
  /* {src, len: longest match, paths: ways through (saturated), empty: can match ""}, or null
     for a part that needs the program. */
  function shapeOf(n, ci) {
    var i, k, x, parts, len, paths, empty, src;
    switch (n.t) {
      case "char": return { src: classSource({ r: ci ? fold(n.r) : n.r, neg: n.neg }), len: 1, paths: 1, empty: false };
      case "any": return { src: "[^\\n]", len: 1, paths: 1, empty: false };
      case "assert": return { src: n.k === "b" || n.k === "B" ? "\\" + n.k : n.k, len: 0, paths: 1, empty: true };
      case "cat":
        parts = []; len = 0; paths = 1; empty = true;
        for (i = 0; i < n.items.length; i++) {
          x = shapeOf(n.items[i], ci);
          if (x === null) { return null; }
          parts.push(x.src); len += x.len; paths = Math.min(paths * x.paths, SATURATED); empty = empty && x.empty;
        }
        return { src: "(?:" + parts.join("") + ")", len: len, paths: paths, empty: empty };
      case "alt":
        parts = []; len = 0; paths = 0; empty = false;
        for (i = 0; i < n.alts.length; i++) {
          x = shapeOf(n.alts[i], ci);
          if (x === null) { return null; }
          parts.push(x.src); len = Math.max(len, x.len); paths = Math.min(paths + x.paths, SATURATED); empty = empty || x.empty;
        }
        return { src: "(?:" + parts.join("|") + ")", len: len, paths: paths, empty: empty };
      case "rep":
        x = shapeOf(n.x, ci);
        if (x === null || x.empty || n.max < 0) { return null; }
        paths = 0; src = 1;  // src: paths of k repetitions, for k from 0 up
        for (k = 0; k <= n.max && paths < SATURATED; k++) {
          if (k >= n.min) { paths = Math.min(paths + src, SATURATED); }
          src = Math.min(src * x.paths, SATURATED);
        }
        return {
          src: "(?:" + x.src + "){" + n.min + "," + n.max + "}" + (n.lazy ? "?" : ""),
          len: n.max * x.len, paths: paths, empty: n.min === 0
        };
    }
    return null;
  }

  /* A CHAR op's class: its ranges, and a table of the 128 ASCII codes (``bits``), so a step
     tests an ASCII character with one lookup (others go through the ranges). Made once per
     node (``classes``): the copies of a repeated node share it. */
  function charClass(node, ci) {
    var r = ci ? fold(node.r) : node.r;
    if (!node.neg && r.length === 1 && r[0][0] === r[0][1]) {
      return { one: r[0][0], r: r, neg: false, bits: null };  // one shape for both kinds
    }
    var bits = new Uint8Array(128);
    if (node.neg) { bits.fill(1); }
    for (var k = 0; k < r.length; k++) {
      if (r[k][0] < 128) { bits.fill(node.neg ? 0 : 1, r[k][0], Math.min(r[k][1], 127) + 1); }
    }
    return { one: -1, r: r, neg: node.neg, bits: bits };
  }

  /* The characters a match can start with (``first`` for ASCII; ``firstHigh``: whether any
     code from 128 up can), from the ops a thread started at pc 0 can reach without reading a
     character, assertions taken as passing. A search starts a thread only at such a
     character: a thread started elsewhere dies on its first step. Not for a pattern that can
     match the empty text (``skip`` false): its match may read no character at all. */
  function firstSet(p) {
    var first = new Uint8Array(128), high = false, skip = true, pcs = p.pcs[0];
    p.stamp++;
    var n = addThread(p, pcs, p.starts[0], 0, 0, 0, null, 0);  // null: assertions hold
    for (var t = 0; t < n; t++) {
      var pc = pcs[t], op = p.op[pc];
      if (op === MATCH) { skip = false; }
      else if (op === ONE) {
        if (p.a[pc] < 128) { first[p.a[pc]] = 1; } else { high = true; }
      } else if (op === ANY) {
        for (var c = 0; c < 128; c++) { if (c !== 10) { first[c] = 1; } }
        high = true;
      } else {
        var cls = p.cls[pc], table = cls.bits;
        for (var d = 0; d < 128; d++) { first[d] |= table[d]; }
        for (var k = 0; k < cls.r.length && !high; k++) { high = cls.neg || cls.r[k][1] >= 128; }
      }
    }
    p.first = first;
    p.firstHigh = high;
    p.skip = skip;
    p.lead = skip ? leadOf(p) : [];
    p.startRe = undefined;  // made when a search first needs it (startRe)
  }

  /* The classes every match begins with, in order (at most LEAD_MAX): the ops from pc 0 up
     to the first SPLIT or JMP that read a character, assertions passed over (they read
     none). Every match starts where the text holds one character of each, in turn. */
  var LEAD_MAX = 8;
  function leadOf(p) {
    var lead = [];
    for (var pc = 0; pc < p.op.length && lead.length < LEAD_MAX; pc++) {
      var op = p.op[pc];
      if (op === ASSERT) { continue; }
      if (op === ONE) { lead.push(unit(p.a[pc])); }
      else if (op === CHAR) { lead.push(classSource(p.cls[pc])); }
      else if (op === ANY) { lead.push("[^\\n]"); }
      else { break; }
    }
    return lead;
  }
  function unit(code) { return "\\u" + (code + 0x10000).toString(16).slice(1); }
  function classSource(cls) {
    var parts = [];
    for (var k = 0; k < cls.r.length; k++) {
      parts.push(unit(cls.r[k][0]) + (cls.r[k][1] > cls.r[k][0] ? "-" + unit(cls.r[k][1]) : ""));
    }
    return "[" + (cls.neg ? "^" : "") + parts.join("") + "]";
  }

  /* Where a match can start, as a native expression, global: the lead classes in turn when
     there are two or more, else the first set as one class. A search with no live thread
     finds the next such place natively instead of one character at a time in script code.
     Either is a fixed run of single-character classes: no backtracking, linear time. Made on
     first use: a pattern compiled in a call for a short text never needs it. */
  function startRe(p) {
    if (p.startRe === undefined) {
      p.startRe = p.lead.length > 1 ? new RegExp(p.lead.join(""), "g") : classRe(p.first, p.firstHigh);
    }
    return p.startRe;
  }
  function classRe(first, high) {
    var parts = [];
    for (var c = 0; c < 128; c++) {
      if (first[c]) { parts.push("\\x" + (c < 16 ? "0" : "") + c.toString(16)); }
    }
    if (high) { parts.push("\\u0080-\\uffff"); }
    return parts.length === 0 ? null : new RegExp("[" + parts.join("") + "]", "g");
  }

  /* The text every match starts with, when the pattern begins with plain characters (its
     assertions aside: they read no character): a search with no live thread jumps to the next
     occurrence with indexOf instead of starting a thread at every position. With (?i) the
     prefix is lower-cased, ASCII only, and found in the lower-cased text (``haystack``). */
  function prefixOf(node, ci) {
    var out = [];
    prefixInto(node, out, ci);
    return out.join("");
  }
  /* Appends the node's leading plain characters to ``out``; whether what follows the node
     may still add to the prefix. (A plain function, not a closure: a recursive closure is a
     cycle only the collector frees.) */
  function prefixInto(n, out, ci) {
    if (n.t === "assert") { return true; }
    if (n.t === "char") {
      if (n.neg || n.r.length !== 1 || n.r[0][0] !== n.r[0][1]) { return false; }
      var code = n.r[0][0];
      if (ci && code >= 128) { return false; }
      out.push(String.fromCharCode(ci && code >= 65 && code <= 90 ? code + 32 : code));
      return true;
    }
    if (n.t === "cat") {
      for (var i = 0; i < n.items.length; i++) { if (!prefixInto(n.items[i], out, ci)) { return false; } }
      return true;
    }
    if (n.t === "rep" && n.min >= 1) { prefixInto(n.x, out, ci); }
    return false;
  }
  /* The text a search looks for the prefix in: the text, or for (?i) the text lower-cased
     (null when lower-casing changed its length: positions would not line up, so no jump).
     Lower-casing folds more than ASCII (the Kelvin sign reads k): that only adds places to
     try, which the program then checks. */
  function haystack(p, text) {
    if (!p.foldPrefix || p.prefix === "") { return text; }
    var low = text.toLowerCase();
    return low.length === text.length ? low : null;
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
    if (text === null) { return true; }  // firstSet: every assertion taken as holding
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

  function search(p, text, from, hay) {
    var cpc = p.pcs[0], cst = p.starts[0], npc = p.pcs[1], nst = p.starts[1];
    var cn = 0, nn, swap, best = null, n = text.length, prefix = p.prefix, ops = p.op;
    var cls = p.cls, a = p.a, mark = p.mark, first = p.first, high = p.firstHigh;
    var skip = p.skip, leads = p.lead.length > 1, stamp, c, t, pc, op, q, oq;
    if (p.stamp > 0x3fffffff) { mark.fill(0); p.stamp = 0; }  // a pinned program's, after many calls
    for (var i = from; i <= n; i++) {
      c = i < n ? text.charCodeAt(i) : -1;
      if (best === null) {
        if (cn === 0) {  // no live thread: jump to where the next match can start
          if (prefix !== "" && hay !== null) {
            var next = hay.indexOf(prefix, i);
            if (next < 0) { break; }
            if (next !== i) { i = next; c = text.charCodeAt(i); }
          } else if (skip && (leads || c < 0 || (c < 128 ? first[c] === 0 : !high))) {
            if (c < 0) { break; }
            var re = startRe(p);
            if (re === null) { break; }
            re.lastIndex = i;
            if (!re.test(text)) { break; }
            i = re.lastIndex - (leads ? p.lead.length : 1);
            c = text.charCodeAt(i);
          }
          p.stamp++;
          cn = addThread(p, cpc, cst, 0, 0, i, text, i);
        } else if (!skip || (c >= 0 && (c < 128 ? first[c] === 1 : high))) {
          cn = addThread(p, cpc, cst, cn, 0, i, text, i);
        }
      }
      if (cn === 0) { if (best !== null) { break; } continue; }
      nn = 0;
      stamp = ++p.stamp;
      for (t = 0; t < cn; t++) {
        pc = cpc[t]; op = ops[pc];
        if (op === MATCH) { best = [cst[t], i]; break; }
        if (c < 0) { continue; }
        if (op === ONE ? c === a[pc] : op === CHAR ? (c < 128 ? cls[pc].bits[c] === 1 : inClass(cls[pc], c)) : c !== 10) {
          q = pc + 1; oq = ops[q];
          if (oq === ONE || oq === CHAR || oq === ANY || oq === MATCH) {  // no epsilon step: add it here
            if (mark[q] !== stamp) { mark[q] = stamp; npc[nn] = q; nst[nn] = cst[t]; nn++; }
          } else {
            nn = addThread(p, npc, nst, nn, q, cst[t], text, i + 1);
          }
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
      startRe(p);  // made now: one made in a call would outlive it
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
  function match(pattern, text) {
    var p = program(pattern), hay = haystack(p, text);
    return (p.native !== null ? nativeSearch(p, text, 0, hay) : search(p, text, 0, hay)) !== null;
  }
  /* ``search`` by the native expression: [start, end] of the first match from ``from`` on.
     It is sticky, tried only where a match can start, found as ``search`` finds it: the
     literal prefix with ``indexOf``, or the start classes natively (a search by the
     expression itself would try it at every position). */
  function nativeSearch(p, text, from, hay) {
    var re = p.native, at = from, m = null, found = p.skip ? startRe(p) : null;
    var back = p.lead.length > 1 ? p.lead.length : 1;
    while (m === null && at <= text.length) {
      if (p.prefix !== "" && hay !== null) {
        if ((at = hay.indexOf(p.prefix, at)) < 0) { break; }
      } else if (found !== null) {
        found.lastIndex = at;
        if (!found.test(text)) { break; }
        at = found.lastIndex - back;
      } else if (p.skip) {
        break;  // no character can start a match
      }
      re.lastIndex = at;
      m = re.exec(text);
      at++;
    }
    re.lastIndex = 0;
    if (found !== null) { found.lastIndex = 0; }
    return m === null ? null : [m.index, m.index + m[0].length];
  }
  function redact(text, patterns, replacement) {
    for (var k = 0; k < patterns.length; k++) {
      var p = program(patterns[k]), out = "", pos = 0, from = 0, hay = haystack(p, text);
      while (from <= text.length) {
        var m = p.native !== null ? nativeSearch(p, text, from, hay) : search(p, text, from, hay);
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
