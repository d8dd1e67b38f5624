"""The fake solver's answers to contest problems in C++, Java, JavaScript, Go and Rust, for a prompt that asks
for a program in one of them.

Why: a run whose plan asks for answers in another language must exercise the whole path offline
(compile, compile errors fed back, runs, timeouts) on the fake model. For three of
:mod:`spade_llm.fake.contests`' problems (:data:`PROGRAMS`), each language has four programs: a
**correct** one (the reference's algorithm and complexity), a **slow** one, a **wrong** one (the
misreading one of the problem's Python mistakes makes) and a **compile error** (the correct program
with one slip: a missing semicolon, an undeclared name, a type mismatch; for JavaScript a syntax
error that ``node --check`` reports). The slow ones are brute force over every run (or, for "Out
of order", sorting by one adjacent swap at a time, restarting each time): cubic, because a compiled
*quadratic* loop over the generator's largest input (10000 numbers) takes well under a tenth of a
second, so it would not fail the time limit derived from the Python reference (1 s of CPU). Zero-sum
pairs and Most said have no such natural brute force, so they have no programs here.

The solver's first prompt names the language on its program line (:func:`asked_language`, from the
toolchains' labels). A prompt in another language for a problem without programs here (or for any
other program task) is answered as in Python, in a ``python`` block: a wrong-language answer, which
the judge fails, as it would a real model's. Nothing here runs a toolchain: the fake never needs one.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from ..languages import TOOLCHAINS
from . import contests

__all__ = ["PROGRAMS", "Programs", "asked_language", "extract", "programs_for", "solve"]


@dataclass(frozen=True)
class Programs:
    """One problem's programs in one language."""

    correct: str
    slow: str
    wrong: str
    compile_error: str
    """The correct program with one slip (so a repair that fixes the slip is right)."""

    @property
    def mistakes(self) -> tuple[str, ...]:
        return (self.slow, self.wrong, self.compile_error)


def _slip(code: str, old: str, new: str) -> str:
    """``code`` with its one ``old`` replaced by ``new``: a mistake stays one edit of the program."""
    if code.count(old) != 1:
        raise ValueError(f"{old!r} occurs {code.count(old)} times")
    return code.replace(old, new)


def _code(text: str) -> str:
    return text.removeprefix("\n")


# -- Best stretch (maximum subarray) ------------------------------------------------------------------------

_CPP_STRETCH = _code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    long long best = LLONG_MIN, current = 0;
    for (int i = 0; i < n; i++) {
        long long x;
        cin >> x;
        current = (i == 0 || current < 0) ? x : current + x;
        best = max(best, current);
    }
    cout << best << "\n";
}
""")

_JAVA_STRETCH = _code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        long best = Long.MIN_VALUE, current = 0;
        for (int i = 0; i < n; i++) {
            long x = Long.parseLong(tokens[i + 1]);
            current = (i == 0 || current < 0) ? x : current + x;
            best = Math.max(best, current);
        }
        System.out.println(best);
    }
}
""")

_JS_STRETCH = _code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
let best = -Infinity;
let current = 0;
for (let i = 1; i <= n; i++) {
  current = i === 1 || current < 0 ? numbers[i] : current + numbers[i];
  best = Math.max(best, current);
}
console.log(best);
""")

_GO_STRETCH = _code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	var best, current int64
	for i := 0; i < n; i++ {
		var x int64
		fmt.Fscan(in, &x)
		if i == 0 || current < 0 {
			current = x
		} else {
			current += x
		}
		if i == 0 || current > best {
			best = current
		}
	}
	fmt.Println(best)
}
""")

_RUST_STRETCH = _code(r"""
use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let mut best = i64::MIN;
    let mut current = 0i64;
    for (i, x) in numbers.take(n).enumerate() {
        current = if i == 0 || current < 0 { x } else { current + x };
        best = best.max(current);
    }
    println!("{}", best);
}
""")

_STRETCH = {
    "cpp": Programs(
        correct=_CPP_STRETCH,
        slow=_code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto& x : a) cin >> x;
    long long best = a[0];
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            long long total = 0;
            for (int k = i; k <= j; k++) total += a[k];
            best = max(best, total);
        }
    cout << best << "\n";
}
"""),
        # lets the run be empty: 0 where every number is negative
        wrong=_slip(
            _slip(_CPP_STRETCH, "best = LLONG_MIN", "best = 0"),
            "current = (i == 0 || current < 0) ? x : current + x;",
            "current = max(0LL, current + x);",
        ),
        compile_error=_slip(_CPP_STRETCH, "current = 0;", "current = 0"),
    ),
    "java": Programs(
        correct=_JAVA_STRETCH,
        slow=_code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = Long.parseLong(tokens[i + 1]);
        long best = a[0];
        for (int i = 0; i < n; i++) {
            for (int j = i; j < n; j++) {
                long total = 0;
                for (int k = i; k <= j; k++) total += a[k];
                best = Math.max(best, total);
            }
        }
        System.out.println(best);
    }
}
"""),
        wrong=_slip(
            _slip(_JAVA_STRETCH, "best = Long.MIN_VALUE", "best = 0"),
            "current = (i == 0 || current < 0) ? x : current + x;",
            "current = Math.max(0, current + x);",
        ),
        compile_error=_slip(_JAVA_STRETCH, "long best = Long.MIN_VALUE", "int best = Long.MIN_VALUE"),
    ),
    "nodejs": Programs(
        correct=_JS_STRETCH,
        slow=_code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
const a = numbers.slice(1, n + 1);
let best = a[0];
for (let i = 0; i < n; i++) {
  for (let j = i; j < n; j++) {
    let total = 0;
    for (let k = i; k <= j; k++) total += a[k];
    best = Math.max(best, total);
  }
}
console.log(best);
"""),
        wrong=_slip(
            _slip(_JS_STRETCH, "let best = -Infinity;", "let best = 0;"),
            "current = i === 1 || current < 0 ? numbers[i] : current + numbers[i];",
            "current = Math.max(0, current + numbers[i]);",
        ),
        compile_error=_slip(_JS_STRETCH, "best = Math.max(best, current);", "best = Math.max(best, current;"),
    ),
    "go": Programs(
        correct=_GO_STRETCH,
        slow=_code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int64, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	best := a[0]
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			var total int64
			for k := i; k <= j; k++ {
				total += a[k]
			}
			if total > best {
				best = total
			}
		}
	}
	fmt.Println(best)
}
"""),
        wrong=_slip(
            _slip(
                _GO_STRETCH,
                "\t\tif i == 0 || current < 0 {\n\t\t\tcurrent = x\n\t\t} else {\n\t\t\tcurrent += x\n\t\t}\n",
                "\t\tcurrent += x\n\t\tif current < 0 {\n\t\t\tcurrent = 0\n\t\t}\n",
            ),
            "if i == 0 || current > best {",
            "if current > best {",
        ),
        compile_error=_slip(_GO_STRETCH, "\t\tvar x int64\n", "\t\tvar x int\n"),
    ),
    "rust": Programs(
        correct=_RUST_STRETCH,
        slow=_code(r"""
use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let a: Vec<i64> = numbers.take(n).collect();
    let mut best = a[0];
    for i in 0..n {
        for j in i..n {
            let total: i64 = a[i..=j].iter().sum();
            best = best.max(total);
        }
    }
    println!("{}", best);
}
"""),
        wrong=_slip(
            _slip(_RUST_STRETCH, "let mut best = i64::MIN;", "let mut best = 0;"),
            "current = if i == 0 || current < 0 { x } else { current + x };",
            "current = (current + x).max(0);",
        ),
        compile_error=_slip(_RUST_STRETCH, "let mut best = i64::MIN;", "let best = i64::MIN;"),
    ),
}

# -- Longest rise ----------------------------------------------------------------------------------------

_CPP_RISE = _code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto& x : a) cin >> x;
    int best = 1, run = 1;
    for (int i = 1; i < n; i++) {
        run = a[i] > a[i - 1] ? run + 1 : 1;
        best = max(best, run);
    }
    cout << best << "\n";
}
""")

_JAVA_RISE = _code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = Integer.parseInt(tokens[i + 1]);
        int best = 1, run = 1;
        for (int i = 1; i < n; i++) {
            run = a[i] > a[i - 1] ? run + 1 : 1;
            best = Math.max(best, run);
        }
        System.out.println(best);
    }
}
""")

_JS_RISE = _code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
const a = numbers.slice(1, n + 1);
let best = 1;
let run = 1;
for (let i = 1; i < n; i++) {
  run = a[i] > a[i - 1] ? run + 1 : 1;
  best = Math.max(best, run);
}
console.log(best);
""")

_GO_RISE = _code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	best, run := 1, 1
	for i := 1; i < n; i++ {
		if a[i] > a[i-1] {
			run++
		} else {
			run = 1
		}
		if run > best {
			best = run
		}
	}
	fmt.Println(best)
}
""")

_RUST_RISE = _code(r"""
use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let a: Vec<i64> = numbers.take(n).collect();
    let (mut best, mut run): (usize, usize) = (1, 1);
    for i in 1..n {
        run = if a[i] > a[i - 1] { run + 1 } else { 1 };
        best = best.max(run);
    }
    println!("{}", best);
}
""")

_RISE = {
    "cpp": Programs(
        correct=_CPP_RISE,
        slow=_code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<long long> a(n);
    for (auto& x : a) cin >> x;
    int best = 1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            bool rises = true;
            for (int k = i + 1; k <= j; k++)
                if (a[k] <= a[k - 1]) {
                    rises = false;
                    break;
                }
            if (rises) best = max(best, j - i + 1);
        }
    cout << best << "\n";
}
"""),
        # reads "larger" as "not smaller"
        wrong=_slip(_CPP_RISE, "a[i] > a[i - 1]", "a[i] >= a[i - 1]"),
        compile_error=_slip(_CPP_RISE, "int best = 1, run = 1;", "long long best = 1; int run = 1;"),
    ),
    "java": Programs(
        correct=_JAVA_RISE,
        slow=_code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = Integer.parseInt(tokens[i + 1]);
        int best = 1;
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                boolean rises = true;
                for (int k = i + 1; k <= j && rises; k++) rises = a[k] > a[k - 1];
                if (rises) best = Math.max(best, j - i + 1);
            }
        }
        System.out.println(best);
    }
}
"""),
        wrong=_slip(_JAVA_RISE, "a[i] > a[i - 1]", "a[i] >= a[i - 1]"),
        compile_error=_slip(_JAVA_RISE, "best = Math.max(best, run);", "best = Math.max(best, run)"),
    ),
    "nodejs": Programs(
        correct=_JS_RISE,
        slow=_code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
const a = numbers.slice(1, n + 1);
let best = 1;
for (let i = 0; i < n; i++) {
  for (let j = i + 1; j < n; j++) {
    let rises = true;
    for (let k = i + 1; k <= j && rises; k++) rises = a[k] > a[k - 1];
    if (rises) best = Math.max(best, j - i + 1);
  }
}
console.log(best);
"""),
        wrong=_slip(_JS_RISE, "a[i] > a[i - 1]", "a[i] >= a[i - 1]"),
        compile_error=_slip(_JS_RISE, "let run = 1;", "let best = 1;"),  # declared twice
    ),
    "go": Programs(
        correct=_GO_RISE,
        slow=_code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	best := 1
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			rises := true
			for k := i + 1; k <= j && rises; k++ {
				rises = a[k] > a[k-1]
			}
			if rises && j-i+1 > best {
				best = j - i + 1
			}
		}
	}
	fmt.Println(best)
}
"""),
        wrong=_slip(_GO_RISE, "a[i] > a[i-1]", "a[i] >= a[i-1]"),
        compile_error=_slip(_GO_RISE, "best, run := 1, 1", "run := 1"),
    ),
    "rust": Programs(
        correct=_RUST_RISE,
        slow=_code(r"""
use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let a: Vec<i64> = numbers.take(n).collect();
    let mut best: usize = 1;
    for i in 0..n {
        for j in i + 1..n {
            if (i + 1..=j).all(|k| a[k] > a[k - 1]) {
                best = best.max(j - i + 1);
            }
        }
    }
    println!("{}", best);
}
"""),
        wrong=_slip(_RUST_RISE, "a[i] > a[i - 1]", "a[i] >= a[i - 1]"),
        compile_error=_slip(_RUST_RISE, "best = best.max(run);", "best = best.max(run as i64);"),
    ),
}

# -- Out of order (inversions), with a Fenwick tree over the values as the reference's -----------------------

_CPP_ORDER = _code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    const int OFFSET = 1001;
    int n;
    cin >> n;
    vector<long long> tree(2 * OFFSET + 2, 0);
    long long count = 0;
    for (int seen = 0; seen < n; seen++) {
        int x;
        cin >> x;
        long long notAbove = 0;
        for (int i = x + OFFSET; i > 0; i -= i & -i) notAbove += tree[i];
        count += seen - notAbove;
        for (int i = x + OFFSET; i < (int)tree.size(); i += i & -i) tree[i]++;
    }
    cout << count << "\n";
}
""")

_JAVA_ORDER = _code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        final int offset = 1001;
        long[] tree = new long[2 * offset + 2];
        long count = 0;
        for (int seen = 0; seen < n; seen++) {
            int x = Integer.parseInt(tokens[seen + 1]);
            long notAbove = 0;
            for (int i = x + offset; i > 0; i -= i & -i) notAbove += tree[i];
            count += seen - notAbove;
            for (int i = x + offset; i < tree.length; i += i & -i) tree[i]++;
        }
        System.out.println(count);
    }
}
""")

_JS_ORDER = _code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
const OFFSET = 1001;
const tree = new Array(2 * OFFSET + 2).fill(0);
let count = 0;
for (let seen = 0; seen < n; seen++) {
  const x = numbers[seen + 1];
  let notAbove = 0;
  for (let i = x + OFFSET; i > 0; i -= i & -i) notAbove += tree[i];
  count += seen - notAbove;
  for (let i = x + OFFSET; i < tree.length; i += i & -i) tree[i]++;
}
console.log(count);
""")

_GO_ORDER = _code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

const offset = 1001

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	tree := make([]int, 2*offset+2)
	count := 0
	for seen := 0; seen < n; seen++ {
		var x int
		fmt.Fscan(in, &x)
		notAbove := 0
		for i := x + offset; i > 0; i -= i & -i {
			notAbove += tree[i]
		}
		count += seen - notAbove
		for i := x + offset; i < len(tree); i += i & -i {
			tree[i]++
		}
	}
	fmt.Println(count)
}
""")

_RUST_ORDER = _code(r"""
use std::io::{self, Read};

const OFFSET: i64 = 1001;

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let mut tree = vec![0i64; (2 * OFFSET + 2) as usize];
    let mut count: i64 = 0;
    for (seen, x) in numbers.take(n).enumerate() {
        let mut not_above = 0;
        let mut i = (x + OFFSET) as usize;
        while i > 0 {
            not_above += tree[i];
            i -= i & i.wrapping_neg();
        }
        count += seen as i64 - not_above;
        let mut i = (x + OFFSET) as usize;
        while i < tree.len() {
            tree[i] += 1;
            i += i & i.wrapping_neg();
        }
    }
    println!("{}", count);
}
""")

_ORDER = {
    "cpp": Programs(
        correct=_CPP_ORDER,
        slow=_code(r"""
#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    cin >> n;
    vector<int> a(n);
    for (auto& x : a) cin >> x;
    // each swap of out-of-order neighbours removes one such pair: count swaps until sorted
    long long count = 0;
    bool swapped = true;
    while (swapped) {
        swapped = false;
        for (int i = 0; i + 1 < n; i++)
            if (a[i] > a[i + 1]) {
                swap(a[i], a[i + 1]);
                count++;
                swapped = true;
                break;
            }
    }
    cout << count << "\n";
}
"""),
        # counts equal values as out of order too
        wrong=_slip(_CPP_ORDER, "for (int i = x + OFFSET; i > 0;", "for (int i = x + OFFSET - 1; i > 0;"),
        compile_error=_slip(_CPP_ORDER, "count += seen - notAbove;", "count += seen - not_above;"),
    ),
    "java": Programs(
        correct=_JAVA_ORDER,
        slow=_code(r"""
import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tokens = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tokens[0]);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = Integer.parseInt(tokens[i + 1]);
        // each swap of out-of-order neighbours removes one such pair: count swaps until sorted
        long count = 0;
        boolean swapped = true;
        while (swapped) {
            swapped = false;
            for (int i = 0; i + 1 < n; i++) {
                if (a[i] > a[i + 1]) {
                    int t = a[i];
                    a[i] = a[i + 1];
                    a[i + 1] = t;
                    count++;
                    swapped = true;
                    break;
                }
            }
        }
        System.out.println(count);
    }
}
"""),
        wrong=_slip(_JAVA_ORDER, "for (int i = x + offset; i > 0;", "for (int i = x + offset - 1; i > 0;"),
        compile_error=_slip(_JAVA_ORDER, "System.out.println(count);", "System.out.println(total);"),
    ),
    "nodejs": Programs(
        correct=_JS_ORDER,
        slow=_code(r"""
const numbers = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean).map(Number);
const n = numbers[0];
const a = numbers.slice(1, n + 1);
// each swap of out-of-order neighbours removes one such pair: count swaps until sorted
let count = 0;
let swapped = true;
while (swapped) {
  swapped = false;
  for (let i = 0; i + 1 < n; i++) {
    if (a[i] > a[i + 1]) {
      [a[i], a[i + 1]] = [a[i + 1], a[i]];
      count++;
      swapped = true;
      break;
    }
  }
}
console.log(count);
"""),
        wrong=_slip(_JS_ORDER, "for (let i = x + OFFSET; i > 0;", "for (let i = x + OFFSET - 1; i > 0;"),
        compile_error=_slip(_JS_ORDER, "  count += seen - notAbove;\n", "  count += seen - notAbove;\n  }\n"),
    ),
    "go": Programs(
        correct=_GO_ORDER,
        slow=_code(r"""
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	// each swap of out-of-order neighbours removes one such pair: count swaps until sorted
	count := 0
	for swapped := true; swapped; {
		swapped = false
		for i := 0; i+1 < n; i++ {
			if a[i] > a[i+1] {
				a[i], a[i+1] = a[i+1], a[i]
				count++
				swapped = true
				break
			}
		}
	}
	fmt.Println(count)
}
"""),
        wrong=_slip(_GO_ORDER, "for i := x + offset; i > 0;", "for i := x + offset - 1; i > 0;"),
        compile_error=_slip(_GO_ORDER, "\t\tnotAbove := 0\n", "\t\tnotAbove, below := 0, 0\n"),  # unused
    ),
    "rust": Programs(
        correct=_RUST_ORDER,
        slow=_code(r"""
use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut numbers = input.split_ascii_whitespace().map(|t| t.parse::<i64>().unwrap());
    let n = numbers.next().unwrap() as usize;
    let mut a: Vec<i64> = numbers.take(n).collect();
    // each swap of out-of-order neighbours removes one such pair: count swaps until sorted
    let mut count: u64 = 0;
    while let Some(i) = (0..n.saturating_sub(1)).find(|&i| a[i] > a[i + 1]) {
        a.swap(i, i + 1);
        count += 1;
    }
    println!("{}", count);
}
"""),
        wrong=_slip(
            _RUST_ORDER,
            "let mut i = (x + OFFSET) as usize;\n        while i > 0 {",
            "let mut i = (x + OFFSET - 1) as usize;\n        while i > 0 {",
        ),
        compile_error=_slip(_RUST_ORDER, "count += seen as i64 - not_above;", "count += seen - not_above;"),
    ),
}

PROGRAMS: dict[str, dict[str, Programs]] = {
    contests.MAX_SUBARRAY.key: _STRETCH,
    contests.LONGEST_RISE.key: _RISE,
    contests.INVERSIONS.key: _ORDER,
}
"""Each problem's programs (by :class:`contests.Problem` key), by toolchain name (``TOOLCHAINS``)."""


def programs_for(problem: contests.Problem, language: str) -> Programs | None:
    """The programs for ``problem`` in ``language`` (None: the fake writes none in it)."""
    return PROGRAMS.get(problem.key, {}).get(language)


# -- the solver's side --------------------------------------------------------------------------------------


@cache
def _asking() -> tuple[re.Pattern[str], dict[str, str]]:
    """The program line of a solver's first prompt, and the toolchain each label there names."""
    names = {t.label: t.name for t in TOOLCHAINS.values()} | {"Python": "python"}  # the line before languages
    labels = "|".join(re.escape(label) for label in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"Write a complete ({labels}) program that reads its input from standard input")
    return pattern, names


def asked_language(prompt: str) -> str | None:
    """The toolchain a program task's prompt asks the answer in (None: it asks for no whole program)."""
    pattern, names = _asking()
    found = pattern.search(prompt)
    return names[found.group(1)] if found else None


def extract(text: str, language: str) -> str | None:
    """The longest block of ``text`` fenced with one of ``language``'s tags (or no tag), or None."""
    tags = "|".join(re.escape(tag) for tag in TOOLCHAINS[language].fence_tags)
    blocks: list[str] = re.findall(rf"```(?:{tags})?[ \t]*\n(.*?)```", text, re.S)
    return max(blocks, key=len) if blocks else None


def solve(
    written: Programs,
    rng: random.Random,
    p_solve: float,
    p_fix: Callable[[float, float], float],
    previous: str | None,
    feedback: str,
) -> str:
    """The program a solver of this skill writes, chosen as :func:`contests.solve` chooses, the compile error
    one mistake among the others; a repair after it fixes the slip, so it is the correct program."""
    if previous is not None and previous.strip() == written.compile_error.strip():
        return written.correct
    return contests.choose(written.correct, written.slow, written.mistakes, rng, p_solve, p_fix, previous, feedback)
