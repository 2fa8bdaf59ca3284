// Writes the licenses of every package bundled into editor.js beside it (make editor).
const fs = require("fs");
const path = require("path");

const lock = JSON.parse(fs.readFileSync(path.join(__dirname, "package-lock.json"), "utf8"));
const out = [];
for (const [where, info] of Object.entries(lock.packages)) {
  if (!where || info.dev) continue;  // the root, and esbuild (it builds, it is not shipped)
  const dir = path.join(__dirname, where);
  const file = fs.readdirSync(dir).find((f) => /^(license|licence)/i.test(f));
  const text = file ? fs.readFileSync(path.join(dir, file), "utf8").trim() : `License: ${info.license}`;
  out.push(`${where.replace(/^node_modules\//, "")} ${info.version} (${info.license})\n\n${text}\n`);
}
fs.writeFileSync(path.join(__dirname, "..", "static", "editor.LICENSES.txt"), out.join("\n" + "-".repeat(72) + "\n"));
