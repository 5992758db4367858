import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { render } from "../scripts/api-reference.ts";
import { ROOT } from "./support/harness.ts";

test("docs/api.md lists exactly the endpoints the server registers", () => {
  const current = readFileSync(join(ROOT, "docs/api.md"), "utf8");
  expect(render(current)).toBe(current);
});

test("the README carries the two quick-start commands", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  expect(readme).toContain("npm install && npm start");
  expect(readme).toContain("npm test");
});
