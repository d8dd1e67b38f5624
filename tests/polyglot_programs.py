"""One small contest problem answered in every compiled answer language: right, wrong, too slow (quadratic),
and not compiling (its error on line 2 or 3). The problem: read ``n`` and ``n`` integers; print how many
pairs ``i < j`` have ``a[i] + a[j] == 0``."""

from __future__ import annotations

import random
from collections import Counter

from spade_llm.types import TestCase

RIGHT = {
    "cpp": """#include <cstdio>
#include <unordered_map>
int main() {
    int n; if (scanf("%d", &n) != 1) return 0;
    std::unordered_map<long long, long long> seen; long long pairs = 0;
    for (int i = 0; i < n; i++) { long long x; scanf("%lld", &x); pairs += seen[-x]; seen[x]++; }
    printf("%lld\\n", pairs);
}
""",
    "java": """import java.io.*;
import java.util.*;
public class Main {
    public static void main(String[] args) throws IOException {
        StreamTokenizer in = new StreamTokenizer(new BufferedInputStream(System.in));
        in.nextToken(); int n = (int) in.nval;
        HashMap<Long, Long> seen = new HashMap<>(); long pairs = 0;
        for (int i = 0; i < n; i++) {
            in.nextToken(); long x = (long) in.nval;
            pairs += seen.getOrDefault(-x, 0L); seen.merge(x, 1L, Long::sum);
        }
        System.out.println(pairs);
    }
}
""",
    "nodejs": """const data = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
const n = data[0]; const seen = new Map(); let pairs = 0;
for (let i = 1; i <= n; i++) { const x = data[i]; pairs += seen.get(-x) || 0; seen.set(x, (seen.get(x) || 0) + 1); }
console.log(String(pairs));
""",
    "go": """package main
import ("bufio"; "fmt"; "os")
func main() {
    r := bufio.NewReader(os.Stdin); var n int; fmt.Fscan(r, &n)
    seen := map[int64]int64{}; var pairs int64
    for i := 0; i < n; i++ { var x int64; fmt.Fscan(r, &x); pairs += seen[-x]; seen[x]++ }
    fmt.Println(pairs)
}
""",
    "rust": """use std::collections::HashMap;
use std::io::Read;
fn main() {
    let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let mut seen: HashMap<i64, i64> = HashMap::new(); let mut pairs: i64 = 0;
    for &x in &v[1..=v[0] as usize] { pairs += *seen.get(&-x).unwrap_or(&0); *seen.entry(x).or_insert(0) += 1; }
    println!("{}", pairs);
}
""",
}

# ordered pairs: every pair counted twice (a plausible misreading of "pairs")
WRONG = {
    "cpp": RIGHT["cpp"].replace('printf("%lld\\n", pairs)', 'printf("%lld\\n", 2 * pairs)'),
    "java": RIGHT["java"].replace("System.out.println(pairs)", "System.out.println(2 * pairs)"),
    "nodejs": RIGHT["nodejs"].replace("String(pairs)", "String(2 * pairs)"),
    "go": RIGHT["go"].replace("fmt.Println(pairs)", "fmt.Println(2 * pairs)"),
    "rust": RIGHT["rust"].replace('println!("{}", pairs)', 'println!("{}", 2 * pairs)'),
}

SLOW = {
    "cpp": """#include <cstdio>
#include <vector>
int main() {
    int n; if (scanf("%d", &n) != 1) return 0; std::vector<long long> a(n); for (auto& x : a) scanf("%lld", &x);
    long long pairs = 0; for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++) if (a[i] + a[j] == 0) pairs++;
    printf("%lld\\n", pairs);
}
""",
    "java": """import java.io.*;
public class Main {
    public static void main(String[] args) throws IOException {
        StreamTokenizer in = new StreamTokenizer(new BufferedInputStream(System.in));
        in.nextToken(); int n = (int) in.nval; long[] a = new long[n];
        for (int i = 0; i < n; i++) { in.nextToken(); a[i] = (long) in.nval; }
        long pairs = 0; for (int i = 0; i < n; i++) for (int j = i + 1; j < n; j++) if (a[i] + a[j] == 0) pairs++;
        System.out.println(pairs);
    }
}
""",
    "nodejs": """const a = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number); const n = a.shift();
let pairs = 0; for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (a[i] + a[j] === 0) pairs++;
console.log(String(pairs));
""",
    "go": """package main
import ("bufio"; "fmt"; "os")
func main() {
    r := bufio.NewReader(os.Stdin); var n int; fmt.Fscan(r, &n); a := make([]int64, n)
    for i := range a { fmt.Fscan(r, &a[i]) }
    var pairs int64; for i := 0; i < n; i++ { for j := i + 1; j < n; j++ { if a[i]+a[j] == 0 { pairs++ } } }
    fmt.Println(pairs)
}
""",
    "rust": """use std::io::Read;
fn main() {
    let mut s = String::new(); std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect(); let a = &v[1..=v[0] as usize];
    let mut pairs: i64 = 0; for i in 0..a.len() { for j in i + 1..a.len() { if a[i] + a[j] == 0 { pairs += 1; } } }
    println!("{}", pairs);
}
""",
}

# (the source, the line its compile error names)
BROKEN = {
    "cpp": ('#include <cstdio>\nint main() {\n    int n = 1\n    printf("%d\\n", n);\n}\n', 4),
    "java": ('public class Main {\n    public static void main(String[] a) {\n        int n = "one";\n    }\n}\n', 3),
    "nodejs": ("const n = 1;\nconsole.log(n +);\n", 2),
    "go": ("package main\nfunc main() {\n    n := 1\n}\n", 3),
    "rust": ('fn main() {\n    let n: i32 = "one";\n}\n', 2),
}


def expected(values: list[int]) -> str:
    counts = Counter(values)
    pairs = sum(counts[x] * counts[-x] for x in counts if x > 0) + counts[0] * (counts[0] - 1) // 2
    return f"{pairs}\n"


def case(values: list[int]) -> TestCase:
    return TestCase(input=f"{len(values)}\n{' '.join(map(str, values))}\n", expected=expected(values))


def sample_tests(large: int = 200_000) -> list[TestCase]:
    """Two small tests (the second with zeros) and a large one, which a quadratic answer cannot finish."""
    rng = random.Random(40)
    big = [rng.randint(-1000, 1000) for _ in range(large)]
    return [case([1, -1, 2, 3, -3, 0]), case([0, 0, 0, 5]), case(big)]
