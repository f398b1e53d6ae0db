/**
 * The names a classic browser script uses that neither it nor the browser declares: the script is checked
 * alone by the TypeScript compiler (as JavaScript, with only the ES and DOM libraries), and every "Cannot
 * find name" it reports is a name the browser will not have: anything the viewer's bundled client
 * expects the page to supply shows up here.
 */
import ts from "typescript";

const FILE = "/inline-script.js";

/** Each undeclared name `script` uses, with its line ("name (line n)"); [] when it uses none. */
export function undeclaredNames(script: string): string[] {
  const options: ts.CompilerOptions = {
    allowJs: true,
    checkJs: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
    types: [],
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === FILE ? ts.createSourceFile(name, script, version) : getSourceFile(name, version, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === FILE || fileExists(name);
  const program = ts.createProgram([FILE], options, host);
  const out: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, " ");
    const name = /^Cannot find name '([^']+)'/.exec(message)?.[1];
    if (name === undefined) continue;
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    out.push(`${name} (line ${line})`);
  }
  return out;
}
