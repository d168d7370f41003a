// An object as YAML, written as `kubectl get -o yaml` writes it: keys sorted as its YAML
// library sorts them, sequences not indented under their key, strings quoted only where YAML
// would read them as something else, long plain strings folded past column 80, and
// metadata.managedFields left out.
"use strict";

const Yaml = (() => {
  const kBestWidth = 80;
  const isLetter = (c) => /\p{L}/u.test(c);
  const isDigit = (c) => c >= "0" && c <= "9";

  // The key order of the YAML library kubectl uses: letters compare as characters, a
  // non-letter sorts before a letter, and runs of digits compare as numbers.
  function keyLess(a, b) {
    const ar = Array.from(a);
    const br = Array.from(b);
    for (let i = 0; i < ar.length && i < br.length; i++) {
      if (ar[i] === br[i]) continue;
      const al = isLetter(ar[i]);
      const bl = isLetter(br[i]);
      if (al && bl) return ar[i] < br[i];
      if (al || bl) return bl;
      let an = 0;
      let bn = 0;
      if (ar[i] === "0" || br[i] === "0") {
        for (let j = i - 1; j >= 0 && isDigit(ar[j]); j--) {
          if (ar[j] !== "0") {
            an = 1;
            bn = 1;
            break;
          }
        }
      }
      let ai = i;
      let bi = i;
      for (; ai < ar.length && isDigit(ar[ai]); ai++) an = an * 10 + (ar[ai].charCodeAt(0) - 48);
      for (; bi < br.length && isDigit(br[bi]); bi++) bn = bn * 10 + (br[bi].charCodeAt(0) - 48);
      if (an !== bn) return an < bn;
      if (ai !== bi) return ai < bi;
      return ar[i] < br[i];
    }
    return ar.length < br.length;
  }
  const sortKeys = (keys) => keys.sort((a, b) => (keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0));

  // Strings YAML 1.1 reads as something other than a string: they are written double-quoted.
  const kNotString = new Set([
    "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
    "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
    ".NaN", ".NAN", "<<",
  ]);
  const kInt = /^[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]*|[1-9][0-9_]*)$/;
  const kFloat = /^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$/;
  const kBase60 = /^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$/;
  const kTimestamp =
    /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?)?$/;
  function readsAsString(s) {
    if (kNotString.has(s)) return false;
    return !(kInt.test(s) || kFloat.test(s) || kBase60.test(s) || kTimestamp.test(s));
  }

  const kFirstIndicators = "#,[]{}&*!|>'\"%@`";
  const isBlank = (c) => c === " " || c === "\t";
  const blankOrEnd = (s, i) => i >= s.length || isBlank(s[i]) || s[i] === "\n";
  const printable = (c) => {
    const p = c.codePointAt(0);
    return p === 0x09 || p === 0x0a || (p >= 0x20 && p <= 0x7e) || p === 0x85 ||
      (p >= 0xa0 && p <= 0xd7ff) || (p >= 0xe000 && p <= 0xfffd && p !== 0xfeff) ||
      (p >= 0x10000 && p <= 0x10ffff);
  };

  // What the emitter allows for a one-line string: "plain", "single" or "double".
  function lineStyle(s) {
    if (s.startsWith("---") || s.startsWith("...")) return "single";
    let block = false;
    let special = false;
    const chars = Array.from(s);
    for (let i = 0; i < chars.length; i++) {
      const c = chars[i];
      if (!printable(c)) special = true;
      if (i === 0) {
        if (kFirstIndicators.includes(c)) block = true;
        if ((c === "?" || c === ":" || c === "-") && blankOrEnd(chars, 1)) block = true;
      } else {
        if (c === ":" && blankOrEnd(chars, i + 1)) block = true;
        if (c === "#" && isBlank(chars[i - 1])) block = true;
      }
    }
    if (special) return "double";
    const leading = isBlank(chars[0]);
    const trailing = isBlank(chars[chars.length - 1]);
    if (leading || trailing || block) return "single";
    return "plain";
  }

  // Writes the words of `s`, breaking at a single space once past the width, as the emitter
  // folds plain and single-quoted strings.
  function folded(s, column, indent) {
    let out = "";
    let spaces = false;
    const chars = Array.from(s);
    for (let i = 0; i < chars.length; i++) {
      const c = chars[i];
      if (c === " ") {
        if (!spaces && column > kBestWidth && i !== 0 && i !== chars.length - 1 &&
            chars[i + 1] !== " ") {
          out += "\n" + " ".repeat(indent);
          column = indent;
        } else {
          out += c;
          column++;
        }
        spaces = true;
      } else {
        out += c;
        column++;
        spaces = false;
      }
    }
    return out;
  }

  function doubleQuoted(s) {
    let out = '"';
    for (const c of s) {
      const p = c.codePointAt(0);
      if (c === '"' || c === "\\") out += "\\" + c;
      else if (c === "\n") out += "\\n";
      else if (c === "\t") out += "\\t";
      else if (c === "\r") out += "\\r";
      else if (!printable(c) || p === 0xfeff) {
        out += p <= 0xff ? "\\x" + p.toString(16).toUpperCase().padStart(2, "0")
          : p <= 0xffff ? "\\u" + p.toString(16).toUpperCase().padStart(4, "0")
          : "\\U" + p.toString(16).toUpperCase().padStart(8, "0");
      } else out += c;
    }
    return out + '"';
  }

  // A string value written at `column`, whose continuation lines are indented by `indent`.
  function stringValue(s, column, indent, isKey) {
    if (!readsAsString(s)) return doubleQuoted(s);
    if (s.includes("\n") && !isKey) {
      const chomp = s.endsWith("\n") ? (s.endsWith("\n\n") ? "+" : "") : "-";
      const body = chomp === "-" ? s : s.slice(0, -1);
      const lead = isBlank(s[0]) || s[0] === "\n" ? String(2) : "";
      return "|" + lead + chomp + body.split("\n").map((l) => (l ? "\n" + " ".repeat(indent) + l : "\n")).join("");
    }
    const style = lineStyle(s);
    if (style === "double" || (isKey && s.includes("\n"))) return doubleQuoted(s);
    if (style === "single") {
      const q = "'" + s.replace(/'/g, "''") + "'";
      return isKey ? q : "'" + folded(s.replace(/'/g, "''"), column + 1, indent) + "'";
    }
    return isKey ? s : folded(s, column, indent);
  }

  function scalar(v, column, indent) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(v);
    return stringValue(String(v), column, indent, false);
  }

  const isEmptyCollection = (v) =>
    (Array.isArray(v) && v.length === 0) ||
    (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0);
  const isCollection = (v) => v && typeof v === "object";

  // The lines of `v` (a mapping or sequence) at `indent`; `first` is what precedes the first
  // line on its line ("- " of an enclosing sequence).
  function block(v, indent, out, firstPrefix) {
    let prefix = firstPrefix;
    const pad = " ".repeat(indent);
    const lead = () => {
      const p = prefix === null ? pad : prefix;
      prefix = null;
      return p;
    };
    if (Array.isArray(v)) {
      for (const item of v) {
        const head = lead() + "- ";
        if (isCollection(item) && !isEmptyCollection(item)) {
          block(item, indent + 2, out, head);
        } else {
          out.push(head + (isEmptyCollection(item) ? (Array.isArray(item) ? "[]" : "{}")
            : scalar(item, head.length, indent + 2)));
        }
      }
      return;
    }
    for (const key of sortKeys(Object.keys(v))) {
      const val = v[key];
      const head = lead() + stringValue(key, 0, 0, true) + ":";
      if (isEmptyCollection(val)) {
        out.push(head + (Array.isArray(val) ? " []" : " {}"));
      } else if (Array.isArray(val)) {
        out.push(head);
        block(val, indent, out, null);
      } else if (isCollection(val)) {
        out.push(head);
        block(val, indent + 2, out, null);
      } else {
        out.push(head + " " + scalar(val, head.length + 1, indent + 2));
      }
    }
  }

  function toYaml(obj) {
    const copy = JSON.parse(JSON.stringify(obj));
    if (copy && copy.metadata) delete copy.metadata.managedFields;
    const out = [];
    if (isCollection(copy) && !isEmptyCollection(copy)) block(copy, 0, out, null);
    else out.push(scalar(copy, 0, 0));
    return out.join("\n") + "\n";
  }

  return { toYaml, keyLess };
})();
