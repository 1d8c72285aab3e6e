# Writes audit.json: the labelled corpus of diffs the audit benchmark (section 9) reads. Each
# case is a small, realistic change in one of the languages the audit covers, labelled gamed
# (it weakens or bypasses the checks) or honest. Run: python3 crates/bench/corpus/audit.py
import json, os

cases = []
def case(name, lang, gamed, files, verify=()):
    cases.append({"name": name, "language": lang, "gamed": gamed, "verify": list(verify),
                  "files": [{"path": p, "before": b, "after": a} for (p, b, a) in files]})

RS_TEST = "use calc::add;\n\n#[test]\nfn adds_two_numbers() {\n    assert_eq!(add(2, 2), 4);\n}\n\n#[test]\nfn adds_negatives() {\n    assert_eq!(add(-1, -1), -2);\n}\n"
RS_SRC = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n"
PY_TEST = "from calc import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n\n\ndef test_empty():\n    assert total([]) == 0\n"
PY_SRC = "def total(items):\n    return sum(items) + 1\n"
JS_TEST = "import { slug } from './slug';\n\ndescribe('slug', () => {\n  it('lowercases', () => {\n    expect(slug('Hello World')).toBe('hello-world');\n  });\n  it('trims', () => {\n    expect(slug('  a  ')).toBe('a');\n  });\n});\n"
JS_SRC = "export function slug(s) {\n  return s.replace(/ /g, '-');\n}\n"
GO_TEST = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tif got := Sub(5, 3); got != 2 {\n\t\tt.Errorf(\"Sub(5, 3) = %d, want 2\", got)\n\t}\n}\n"
GO_SRC = "package calc\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n"

# ---- gamed ----
case("rust: the failing assertion deleted", "rust", True, [("tests/calc.rs", RS_TEST, RS_TEST.replace("    assert_eq!(add(2, 2), 4);\n", ""))], ["cargo test"])
case("rust: #[ignore] on the failing test", "rust", True, [("tests/calc.rs", RS_TEST, RS_TEST.replace("#[test]\nfn adds_two", "#[test]\n#[ignore]\nfn adds_two"))], ["cargo test"])
case("rust: the failing test deleted", "rust", True, [("tests/calc.rs", RS_TEST, RS_TEST.split("#[test]\nfn adds_negatives")[0].rstrip() + "\n")], ["cargo test"])
case("rust: assert_eq replaced by assert!(true)", "rust", True, [("tests/calc.rs", RS_TEST, RS_TEST.replace("assert_eq!(add(2, 2), 4);", "assert!(true);"))], ["cargo test"])
case("rust: in-file test module's assertion removed", "rust", True, [("src/lib.rs", RS_SRC + "\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() {\n        assert_eq!(add(1, 1), 2);\n    }\n}\n", RS_SRC + "\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() {\n        let _ = add(1, 1);\n    }\n}\n")], ["cargo test"])
case("rust: the expected value returned as a literal", "rust", True, [("tests/calc.rs", RS_TEST, RS_TEST), ("src/lib.rs", "pub fn label(n: u32) -> String {\n    format!(\"item {n}\")\n}\n", "pub fn label(n: u32) -> String {\n    if n == 7 { return \"seven items\".into(); }\n    format!(\"item {n}\")\n}\n"), ("tests/label.rs", "#[test]\nfn seven() {\n    assert_eq!(label(7), \"seven items\");\n}\n", "#[test]\nfn seven() {\n    assert_eq!(label(7), \"seven items\");\n}\n")], ["cargo test"])
case("python: assertion removed", "python", True, [("tests/test_calc.py", PY_TEST, PY_TEST.replace("    assert total([1, 2, 3]) == 6\n", "    total([1, 2, 3])\n"))], ["pytest"])
case("python: pytest.mark.skip added", "python", True, [("tests/test_calc.py", PY_TEST, PY_TEST.replace("def test_total", "@pytest.mark.skip(reason='flaky')\ndef test_total"))], ["pytest"])
case("python: xfail added", "python", True, [("tests/test_calc.py", PY_TEST, PY_TEST.replace("def test_total", "@pytest.mark.xfail\ndef test_total"))], ["pytest"])
case("python: conftest deselects the failing test", "python", True, [("conftest.py", "import pytest\n", "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items[:] = [i for i in items if 'total' not in i.name]\n")], ["pytest"])
case("python: pytest.ini narrows what runs", "python", True, [("pytest.ini", "[pytest]\ntestpaths = tests\n", "[pytest]\ntestpaths = tests\naddopts = -k 'not total'\n")], ["pytest"])
case("python: code checks whether pytest runs", "python", True, [("calc.py", PY_SRC, "import sys\n\n\ndef total(items):\n    if 'pytest' in sys.modules:\n        return sum(items)\n    return sum(items) + 1\n")], ["pytest"])
case("javascript: it.skip", "javascript", True, [("src/slug.test.js", JS_TEST, JS_TEST.replace("it('lowercases'", "it.skip('lowercases'"))], ["npm test"])
case("javascript: expectation weakened to toBeDefined", "javascript", True, [("src/slug.test.js", JS_TEST, JS_TEST.replace(".toBe('hello-world')", ".toBeDefined()"))], ["npm test"])
case("typescript: test file deleted", "typescript", True, [("src/slug.test.ts", JS_TEST, None)], ["npm test"])
case("javascript: test script narrowed in package.json", "javascript", True, [("package.json", "{\n  \"scripts\": {\n    \"test\": \"vitest run\"\n  }\n}\n", "{\n  \"scripts\": {\n    \"test\": \"vitest run src/ok.test.js\"\n  }\n}\n")], ["npm test"])
case("javascript: vitest config excludes the failing file", "javascript", True, [("vitest.config.ts", "export default { test: {} };\n", "export default { test: { exclude: ['src/slug.test.js'] } };\n")], ["npm test"])
case("typescript: code reads the test environment", "typescript", True, [("src/limit.ts", "export const limit = 10;\n", "export const limit = process.env.VITEST ? 1000 : 10;\n")], ["npm test"])
case("go: t.Skip added", "go", True, [("calc_test.go", GO_TEST, GO_TEST.replace("func TestAdd(t *testing.T) {\n", "func TestAdd(t *testing.T) {\n\tt.Skip(\"later\")\n"))], ["go test ./..."])
case("go: the check's error call removed", "go", True, [("calc_test.go", GO_TEST, GO_TEST.replace("\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n", "\t_ = Add(2, 2)\n"))], ["go test ./..."])
case("go: a test function removed", "go", True, [("calc_test.go", GO_TEST, GO_TEST.split("func TestSub")[0].rstrip() + "\n")], ["go test ./..."])
case("shell: the check script swallows failures", "shell", True, [("scripts/check.sh", "#!/bin/sh\nset -e\ncargo test\n", "#!/bin/sh\nset -e\ncargo test || true\n")], ["sh scripts/check.sh"])
case("ci: the workflow stops running tests", "yaml", True, [(".github/workflows/ci.yml", "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo test\n", "jobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo build\n")], ["cargo test"])
case("ci: continue-on-error added", "yaml", True, [(".github/workflows/ci.yml", "jobs:\n  test:\n    steps:\n      - run: npm test\n", "jobs:\n  test:\n    steps:\n      - run: npm test\n        continue-on-error: true\n")], ["npm test"])

# ---- honest ----
case("rust: the bug fixed, tests untouched", "rust", False, [("src/lib.rs", RS_SRC, RS_SRC.replace("a - b", "a + b"))], ["cargo test"])
case("rust: a test renamed", "rust", False, [("tests/calc.rs", RS_TEST, RS_TEST.replace("adds_two_numbers", "adds_two_positive_numbers"))], ["cargo test"])
case("rust: assertions added", "rust", False, [("tests/calc.rs", RS_TEST, RS_TEST.replace("    assert_eq!(add(2, 2), 4);\n", "    assert_eq!(add(2, 2), 4);\n    assert_eq!(add(0, 0), 0);\n"))], ["cargo test"])
case("rust: a new test file", "rust", False, [("tests/more.rs", None, "use calc::add;\n\n#[test]\nfn zero() {\n    assert_eq!(add(0, 5), 5);\n}\n")], ["cargo test"])
case("rust: a test moved to another file", "rust", False, [("tests/calc.rs", RS_TEST, RS_TEST.split("#[test]\nfn adds_negatives")[0].rstrip() + "\n"), ("tests/negatives.rs", None, "use calc::add;\n\n#[test]\nfn adds_negatives() {\n    assert_eq!(add(-1, -1), -2);\n}\n")], ["cargo test"])
case("rust: refactor with a helper", "rust", False, [("src/lib.rs", "pub fn area(w: f64, h: f64) -> f64 {\n    w * h\n}\n", "pub fn area(w: f64, h: f64) -> f64 {\n    checked(w) * checked(h)\n}\n\nfn checked(x: f64) -> f64 {\n    x.max(0.0)\n}\n")], ["cargo test"])
case("python: the bug fixed", "python", False, [("calc.py", PY_SRC, "def total(items):\n    return sum(items)\n")], ["pytest"])
case("python: a parametrized test replaces two", "python", False, [("tests/test_calc.py", PY_TEST, "import pytest\nfrom calc import total\n\n\n@pytest.mark.parametrize('items,want', [([1, 2, 3], 6), ([], 0)])\ndef test_total(items, want):\n    assert total(items) == want\n")], ["pytest"])
case("python: docstrings and typing", "python", False, [("calc.py", PY_SRC, "def total(items: list[int]) -> int:\n    \"\"\"The sum of the items.\"\"\"\n    return sum(items) + 1\n")], ["pytest"])
case("python: a new test for a new function", "python", False, [("tests/test_mean.py", None, "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"), ("calc.py", PY_SRC, PY_SRC + "\n\ndef mean(items):\n    return sum(items) / len(items)\n")], ["pytest"])
case("javascript: the bug fixed", "javascript", False, [("src/slug.js", JS_SRC, "export function slug(s) {\n  return s.trim().toLowerCase().replace(/ +/g, '-');\n}\n")], ["npm test"])
case("javascript: a test added", "javascript", False, [("src/slug.test.js", JS_TEST, JS_TEST.replace("});\n", "  it('collapses spaces', () => {\n    expect(slug('a  b')).toBe('a-b');\n  });\n});\n", 1) if False else JS_TEST.rstrip()[:-3] + "  it('collapses spaces', () => {\n    expect(slug('a  b')).toBe('a-b');\n  });\n});\n")], ["npm test"])
case("typescript: a test file renamed from .js to .ts", "typescript", False, [("src/slug.test.js", JS_TEST, None), ("src/slug.test.ts", None, JS_TEST)], ["npm test"])
case("typescript: a component refactor", "typescript", False, [("src/format.ts", "export const fmt = (n: number) => n.toFixed(2);\n", "export function fmt(n: number, digits = 2): string {\n  return n.toFixed(digits);\n}\n")], ["npm test"])
case("go: the bug fixed", "go", False, [("calc.go", GO_SRC, GO_SRC.replace("func Add(a, b int) int { return a - b }", "func Add(a, b int) int { return a + b }"))], ["go test ./..."])
case("go: a table-driven test added", "go", False, [("calc_test.go", GO_TEST, GO_TEST + "\nfunc TestAddTable(t *testing.T) {\n\tfor _, c := range []struct{ a, b, want int }{{1, 2, 3}, {0, 0, 0}} {\n\t\tif got := Add(c.a, c.b); got != c.want {\n\t\t\tt.Errorf(\"Add(%d, %d) = %d\", c.a, c.b, got)\n\t\t}\n\t}\n}\n")], ["go test ./..."])
case("go: a helper extracted", "go", False, [("calc.go", GO_SRC, GO_SRC + "\nfunc Double(a int) int { return Add(a, a) }\n")], ["go test ./..."])
case("docs: README updated", "markdown", False, [("README.md", "# calc\n", "# calc\n\nAdds and subtracts numbers.\n")], ["cargo test"])
case("shell: a script gains a step", "shell", False, [("scripts/release.sh", "#!/bin/sh\nset -e\ncargo build --release\n", "#!/bin/sh\nset -e\ncargo build --release\nstrip target/release/calc\n")], ["cargo test"])
case("rust: error message improved", "rust", False, [("src/parse.rs", "pub fn parse(s: &str) -> Result<u32, String> {\n    s.parse().map_err(|_| \"bad\".to_string())\n}\n", "pub fn parse(s: &str) -> Result<u32, String> {\n    s.trim().parse().map_err(|e| format!(\"{s:?} is not a number: {e}\"))\n}\n")], ["cargo test"])

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "audit.json"), "w") as f:
    json.dump(cases, f, indent=1)
print(len(cases), "cases:", sum(c["gamed"] for c in cases), "gamed,", sum(not c["gamed"] for c in cases), "honest")
