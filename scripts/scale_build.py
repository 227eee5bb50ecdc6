#!/usr/bin/env python3
"""Times the build of one long function with and without #[functionalize]
(issue 11, item 9: "5,000-statement bodies compile (debug and release)
within 2x of the unannotated function's build time"), and of a crate of 50
small functions (issue 14, item 4: "within 1.3x"): `scale_build.py many`.

Writes a scratch crate (default /tmp/funcz-scale) that depends on this
checkout, builds its dependencies once, then times `cargo build` of the
crate alone in each profile for: the unannotated function, and the same
body under #[functionalize] and #[functionalize(remove =
"mutations_and_views")]. Prints seconds and ratios. Run from the
repository root: python3 scripts/scale_build.py [statements] [dir].

BUILD= picks what is timed (each a build of the crate alone):
  clean        no incremental cache (CARGO_INCREMENTAL=0), the default here
  incremental  cargo's default for debug builds (incremental on), its cache
               removed first: a first build as a user runs it
  rebuild      incremental on, cache warm, one function edited (one literal):
               the edit-compile cycle, where every annotated function is
               expanded again (rustc does not cache a macro's output)"""

import os
import resource
import shutil
import subprocess
import sys
import time

MANY = len(sys.argv) > 1 and sys.argv[1] == "many"
CHAIN = len(sys.argv) > 1 and sys.argv[1] == "chain"
N = 50 if MANY else 1000 if CHAIN else int(sys.argv[1]) if len(sys.argv) > 1 else 5000
DIR = sys.argv[2] if len(sys.argv) > 2 else "/tmp/funcz-scale"
ROOT = os.path.abspath(".")


def body(n):
    """n statements cycling through what ported code does: in-place ops on
    an input, a view of it mutated, functional ops on locals, reads."""
    out = []
    for i in range(n):
        k = i % 5
        if k == 0:
            out.append(f"    x.mul_(1.0001).add_(w);")
        elif k == 1:
            out.append(f"    let v{i} = x.narrow(0, {i % 4}, 1);")
        elif k == 2:
            out.append(f"    v{i - 1}.sub_(0.5);")
        elif k == 3:
            out.append(f"    let s{i} = (&*x * 2.0).sum();")
        else:
            out.append(f"    acc.add_(&s{i - 1});")
    return "\n".join(out)


SMALL = """    let h = x.matmul(w);
    let b = h.clone();
    b.narrow(0, 0, 2).add_(1.0);
    let r = b.select(0, 0);
    r.mul_(2.0).add_(3.0);
    b.t().select(0, 1).fill_(7.0);
    for i in 0..n {
        b.select(0, i % 2).mul_(1.5);
    }
    if n > 3 {
        b.relu_();
    } else {
        b.clamp_(-1.0, 1.0);
    }
    cache.narrow(0, n % 4, 1).copy_(&b.narrow(0, 0, 1));
    for (p, g) in params.iter_mut().zip(grads.iter()) {
        p.sub_(&(g * 0.1));
    }
    let z = &b + &r;
    x.add_(&z.mean());
    z.sum()"""


def chain(n):
    """One statement: n in-place ops chained on an input (issue 11, item
    9: "chains of 1,000 in-place ops")."""
    ops = ["add_(1.0)", "mul_(0.999)", "sub_(w)", "div_(1.001)"]
    return "    x" + "".join("." + ops[i % 4] for i in range(n)) + ";"


def functions(attr, edited=None):
    if CHAIN:
        return f"""{attr}
pub fn long(x: &mut Tensor, w: &Tensor) -> Tensor {{
{chain(N)}
    x.sum()
}}
"""
    if not MANY:
        return f"""{attr}
pub fn long(x: &mut Tensor, w: &Tensor, acc: &mut Tensor) -> Tensor {{
{body(N)}
    x.sum()
}}
"""
    return "\n".join(
        f"""{attr}
pub fn small{i}(x: &mut Tensor, w: &Tensor, cache: &mut Tensor, params: &mut [Tensor], grads: &[Tensor], n: usize) -> Tensor {{
{SMALL.replace("mul_(1.5)", "mul_(1.25)") if i == edited else SMALL}
}}
"""
        for i in range(N)
    )


def write(attr, edited=None):
    src = os.path.join(DIR, "src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(DIR, "Cargo.toml"), "w") as f:
        f.write(f"""[package]
name = "funcz-scale"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
funcz = {{ path = "{ROOT}" }}

[workspace]
""")
    with open(os.path.join(src, "lib.rs"), "w") as f:
        f.write("use funcz::Tensor;\n\n" + functions(attr, edited))


BUILD = os.environ.get("BUILD", "clean")


def build(profile):
    args = ["cargo", "build", "-q", "-p", "funcz-scale"]
    if profile == "release":
        args.append("--release")
    # `clean`: no incremental cache, since a debug rebuild of unchanged code
    # would reuse it and time nothing (0.3 s for 5,000 statements).
    # `incremental`: the cache is removed before the timed build.
    incremental = "0" if BUILD == "clean" else "1"
    target = os.path.join(DIR, "target")
    if BUILD == "incremental":
        shutil.rmtree(os.path.join(target, profile, "incremental"), ignore_errors=True)
    env = dict(os.environ, CARGO_TARGET_DIR=target, CARGO_INCREMENTAL=incremental)
    t = time.time()
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=DIR, env=env, check=True)
    r2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r2.ru_utime - r.ru_utime) + (r2.ru_stime - r.ru_stime)
    return time.time() - t, cpu


def main():
    shutil.rmtree(os.path.join(DIR, "src"), ignore_errors=True)
    variants = [
        ("original", ""),
        ("mutations", "#[funcz::functionalize]"),
        ("mutations_and_views", '#[funcz::functionalize(remove = "mutations_and_views")]'),
    ]
    what = f"{N} small functions" if MANY else f"a chain of {N} in-place ops" if CHAIN else f"{N} statements"
    print(f"{what}, {BUILD} builds")
    if BUILD == "rebuild" and not MANY:
        sys.exit("BUILD=rebuild edits one of the small functions: use `many`")
    rounds = int(os.environ.get("ROUNDS", "3"))
    # PROFILES=debug (or release) times one profile only.
    for profile in os.environ.get("PROFILES", "debug,release").split(","):
        write("")
        build(profile)  # dependencies, once
        # Interleaved rounds, the minimum of each: other work on the
        # machine slows single builds, not the ratios of minima.
        # Wall-clock time and CPU time (user + system, all of rustc's
        # threads): on a shared machine the CPU time moves less.
        times = {}
        cpus = {}
        for _ in range(rounds):
            for name, attr in variants:
                write(attr)
                # touch so cargo rebuilds the crate
                os.utime(os.path.join(DIR, "src", "lib.rs"))
                if BUILD == "rebuild":
                    build(profile)  # the cache, warm
                    write(attr, edited=N // 2)
                t, cpu = build(profile)
                times[name] = min(t, times.get(name, t))
                cpus[name] = min(cpu, cpus.get(name, cpu))
        base, cbase = times["original"], cpus["original"]
        for name, t in times.items():
            c = cpus[name]
            print(
                f"{profile:8} {name:20} {t:8.3f} s  {t / base:5.2f}x   cpu {c:8.3f} s  {c / cbase:5.2f}x",
                flush=True,
            )

main()
