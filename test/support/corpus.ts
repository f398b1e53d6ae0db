/** Strings that break naive storage, shared by the fidelity tests of the tree and of the store. */

/** NUL, lone surrogates, astral characters, CRLF, control characters, look-alike events, backslashes. */
export const CORPUS: Record<string, string> = {
  nul: "before\u0000after\u0000",
  "lone high surrogate": "a\ud800b",
  "lone low surrogate": "a\udfffb",
  "astral emoji": "crab 🦀 test 🧪 clef 𝄞 flag 🏳️‍🌈",
  crlf: "line one\r\nline two\r\n\r\n",
  controls: "\u0001\u0007\u001b[31mred\u001b[0m\t\u2028\u2029",
  "json-looking": '{"type":"message_stop"}\n\ndata: not an event',
  backslashes: 'C:\\path\\to "quoted" \\u0000 not an escape',
};
