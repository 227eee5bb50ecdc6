//! Differential test of the graph-level functionalization and the ONNX
//! export: 250 random programs of views, in-place ops (through views, on
//! inputs and on intermediates), metadata in-place ops and functional ops,
//! written without the macro, are traced, functionalized by
//! `Graph::functionalize` in both modes, exported, run in tract, and
//! compared with the eager run (returned values and mutated inputs).
#![cfg(feature = "onnx")]

mod support;

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Remove, Tracer};
use support::onnx_check::{check_model, check_run, vals};

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn value(&mut self) -> f32 {
        (self.below(17) as f32 - 8.0) / 4.0
    }
}

/// A handle of the program, and whether it may be written through (not
/// derived from an `expand`).
struct Handle {
    t: Tensor,
    writable: bool,
}

/// One random step on the pool of handles; returns a short description.
fn step(rng: &mut Rng, pool: &mut Vec<Handle>) -> String {
    let i = rng.below(pool.len());
    let h = &pool[i];
    let (t, w) = (&h.t, h.writable);
    let shape = t.shape().to_vec();
    let rank = shape.len();
    let push = |pool: &mut Vec<Handle>, t: Tensor, writable: bool, what: String| {
        pool.push(Handle { t, writable });
        what
    };
    match rng.below(22) {
        // views
        0 if rank >= 1 && shape[0] >= 2 => {
            let start = rng.below(shape[0] - 1);
            let end = start + 1 + rng.below(shape[0] - start);
            let st = 1 + rng.below(2);
            let v = t.slice(0, start as i64, end as i64, st as i64);
            push(pool, v, w, format!("slice {i}"))
        }
        1 if rank >= 1 && shape[rank - 1] >= 1 => {
            let d = rank - 1;
            let idx = rng.below(shape[d]);
            let v = t.select(d as i64, idx as i64);
            push(pool, v, w, format!("select {i}"))
        }
        2 if rank <= 2 => push(pool, t.t(), w, format!("t {i}")),
        3 if rank >= 2 => push(pool, t.transpose(0, -1), w, format!("transpose {i}")),
        4 if rank >= 2 => {
            let v = t.diagonal(rng.below(2) as i64, 0, 1);
            if v.numel() == 0 {
                return "skip".into();
            }
            push(pool, v, w, format!("diagonal {i}"))
        }
        5 if rank < 4 => push(pool, t.unsqueeze(0), w, format!("unsqueeze {i}")),
        6 if rank >= 1 && shape[0] >= 2 => {
            let parts = t.split(2, 0);
            let k = rng.below(parts.len());
            push(pool, parts[k].shallow_clone(), w, format!("split {i}"))
        }
        7 if rank >= 1 && shape[0] >= 1 => {
            let parts = t.unbind(0);
            let k = rng.below(parts.len());
            push(pool, parts[k].shallow_clone(), w, format!("unbind {i}"))
        }
        8 if t.is_contiguous() => push(pool, t.view([-1]), w, format!("view {i}")),
        9 => push(pool, t.reshape([-1]), w, format!("reshape {i}")),
        10 if rank >= 2 => {
            let dims: Vec<i64> = (0..rank as i64).rev().collect();
            push(pool, t.permute(dims), w, format!("permute {i}"))
        }
        11 if rank >= 1 && shape[rank - 1] >= 2 => {
            let d = rank - 1;
            let v = t.unfold(d as i64, 2, 2);
            push(pool, v, w, format!("unfold {i}"))
        }
        12 if rank >= 1 && shape[0] == 1 => {
            let mut s: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            s[0] = 3;
            push(pool, t.expand(s), false, format!("expand {i}"))
        }
        // in-place ops through the handle
        13 if w => {
            t.add_(rng.value());
            format!("add_ {i}")
        }
        14 if w => {
            t.mul_(rng.value());
            format!("mul_ {i}")
        }
        15 if w => {
            let other = t.mul(0.5).add(rng.value());
            t.sub_(&other);
            format!("sub_ tensor {i}")
        }
        16 if w => {
            t.clamp_(-1.0, 1.0);
            format!("clamp_ {i}")
        }
        17 if w && rank >= 1 => {
            // copy_ from a broadcast row of fresh values.
            let row = Tensor::<f32>::full(&[shape[rank - 1]], rng.value()).add(1.0);
            t.copy_(&row);
            format!("copy_ {i}")
        }
        18 if w => {
            if rng.below(2) == 0 {
                t.fill_(rng.value());
            } else {
                t.neg_();
            }
            format!("fill_/neg_ {i}")
        }
        // metadata in-place ops on the handle itself
        19 if rank <= 2 => {
            pool[i].t.t_();
            format!("t_ {i}")
        }
        20 if rank < 4 => {
            pool[i].t.unsqueeze_(0);
            format!("unsqueeze_ {i}")
        }
        // functional
        21 => {
            let v = if rank >= 1 {
                t.sum_dim(0, rng.below(2) == 0)
            } else {
                t.exp()
            };
            push(pool, v, true, format!("sum/exp {i}"))
        }
        _ => "skip".into(),
    }
}

#[test]
fn random_unannotated_programs_functionalized_and_run_in_tract() {
    let mut checked = 0;
    let mut mutated_inputs = 0;
    let mut scatters = 0;
    let mut impure_graphs = 0;
    for seed in 0..250u64 {
        let mut rng = Rng(seed);
        let x = Tensor::<f32>::from_vec(
            (0..24)
                .map(|k| ((k * 7 + seed as usize) % 11) as f32 - 5.0)
                .collect(),
            &[4, 6],
        );
        let y = Tensor::<f32>::from_vec((0..6).map(|k| (k as f32 - 2.5) * 0.5).collect(), &[1, 6]);
        let mut log = Vec::new();
        let (_, run) = Tracer::new(&format!("prog{seed}"))
            .with_examples()
            .input("x", &x)
            .input("y", &y)
            .run_example(|| {
                let mut pool = vec![
                    Handle {
                        t: x.shallow_clone(),
                        writable: true,
                    },
                    Handle {
                        t: y.shallow_clone(),
                        writable: true,
                    },
                ];
                for _ in 0..10 {
                    log.push(step(&mut rng, &mut pool));
                }
                let k = pool.len();
                let outs: Vec<Tensor> = pool[k.saturating_sub(3)..]
                    .iter()
                    .map(|h| h.t.shallow_clone())
                    .collect();
                outs
            });
        let ctx = format!("seed {seed}: {}", log.join(", "));
        let r = std::panic::catch_unwind(|| {
            let c = check_run(&run);
            // Both modes of the graph pass give the same values in tract.
            let g = run.graph.functionalize(Remove::Mutations).unwrap();
            assert!(g.is_functional() && g.dead_nodes().is_empty(), "{g}");
            check_model(
                &g,
                &vals(&run.inputs),
                &vals(&run.inputs_after),
                &vals(&run.outputs),
            );
            let scatters = c
                .model
                .graph
                .ops()
                .iter()
                .filter(|o| o.ends_with("_scatter"))
                .count();
            (
                c.model.input_updates.len(),
                scatters,
                !run.graph.is_functional(),
            )
        });
        match r {
            Ok((n, s, impure)) => {
                mutated_inputs += n;
                scatters += s;
                impure_graphs += impure as usize;
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "panic".into());
                panic!("{ctx}\n{msg}\noriginal graph:\n{}", run.graph);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 250);
    // The generator does mutate inputs through views in a fair share.
    eprintln!(
        "{checked} programs: {impure_graphs} traced with in-place ops, {mutated_inputs} input \
         updates, {scatters} scatters in the exported graphs"
    );
    assert!(mutated_inputs >= 50, "{mutated_inputs}");
    assert!(impure_graphs >= 150, "{impure_graphs}");
    assert!(scatters >= 100, "{scatters}");
}
