//! A trace file's rows read the plain way ([`crate::plain`]): the events,
//! ops, tensors and counters of a run of a file, each element read
//! without serde where it is plain and by serde where it is not (an
//! escaped name, an unknown key, a duplicate, anything out of the way), so
//! the rows are always what serde would have read, and a malformed element
//! is serde's error. Three times serde's speed on a simulator's trace
//! (docs/memory.md).

use super::{Counter, EventKind, EventRef, Events, OpRef, Ops, TensorRef, Tensors};
use crate::cols::PushRows;
use crate::graph::TensorKind;
use crate::plain::{Lex, Seen};

/// Lists reused from row to row (an op's operands, a tensor's consumers).
#[derive(Default)]
pub(crate) struct Scratch {
    lists: [Vec<usize>; 3],
}

/// A list whose elements can be read the plain way.
pub(crate) trait PlainRows: PushRows {
    /// Reads one element at `lx` and appends it; `None`, with nothing
    /// appended, when the element is not plain.
    fn push_plain(&mut self, lx: &mut Lex<'_>, s: &mut Scratch) -> Option<()>;
}

/// Parses one run of an array (`[` elements `]`) onto `list`; `None` at
/// anything serde would refuse (the caller then parses the whole file for
/// serde's error).
pub(crate) fn run_onto<L: PlainRows>(text: &[u8], list: &mut L, s: &mut Scratch) -> Option<()> {
    let mut lx = Lex::new(text);
    lx.eat(b'[')?;
    if lx.eat(b']').is_some() {
        return lx.at_end().then_some(());
    }
    loop {
        lx.peek()?;
        let start = lx.at;
        let mut trial = lx;
        if list.push_plain(&mut trial, s).is_some() {
            lx = trial;
        } else {
            let mut it = serde_json::Deserializer::from_slice(&text[start..]).into_iter::<L::Row>();
            let row = it.next()?.ok()?;
            lx.at = start + it.byte_offset();
            list.push_row(row).ok()?;
        }
        match lx.peek()? {
            b',' => lx.at += 1,
            b']' => {
                lx.at += 1;
                return lx.at_end().then_some(());
            }
            _ => return None,
        }
    }
}

/// Reads an object's members: `each(key, lx)` reads the value of a key it
/// knows and returns the key's number (under 64), `None` for a key it
/// does not know or a value that is not plain. The keys seen, or `None`
/// (a duplicate included).
fn members<'a>(
    lx: &mut Lex<'a>,
    mut each: impl FnMut(&'a [u8], &mut Lex<'a>) -> Option<u32>,
) -> Option<Seen> {
    lx.eat(b'{')?;
    let mut seen = Seen::default();
    if lx.eat(b'}').is_some() {
        return Some(seen);
    }
    loop {
        let k = lx.key()?;
        seen.mark(each(k, lx)?)?;
        if lx.member_end()? {
            return Some(seen);
        }
    }
}

/// Whether keys `0..n` were all seen (the required ones come first).
fn has_first(seen: &Seen, n: u32) -> bool {
    (0..n).all(|k| seen.has(k))
}

fn event_kind(s: &[u8]) -> Option<EventKind> {
    Some(match s {
        b"alloc" => EventKind::Alloc,
        b"free" => EventKind::Free,
        b"evict" => EventKind::Evict,
        b"reload" => EventKind::Reload,
        b"recompute" => EventKind::Recompute,
        b"stream_in" => EventKind::StreamIn,
        b"stream_out" => EventKind::StreamOut,
        _ => return None,
    })
}

/// An optional id: `null` or an integer that fits.
fn opt_id(lx: &mut Lex<'_>) -> Option<Option<usize>> {
    match lx.opt_u64()? {
        Some(v) => usize::try_from(v).ok().map(Some),
        None => Some(None),
    }
}

/// An optional string: `null` or a plain one.
fn opt_str<'a>(lx: &mut Lex<'a>) -> Option<Option<&'a str>> {
    if lx.null() {
        return Some(None);
    }
    lx.str().map(Some)
}

impl PlainRows for Events {
    fn push_plain(&mut self, lx: &mut Lex<'_>, _: &mut Scratch) -> Option<()> {
        let (mut t_ns, mut kind, mut tensor, mut bytes) = (0, EventKind::Alloc, 0, 0);
        let (mut pool, mut reason): (&[u8], Option<&[u8]>) = (b"", None);
        let (mut offset, mut op, mut thread) = (None, None, None);
        let (mut dma_start_ns, mut dma_end_ns) = (None, None);
        let (mut live_bytes, mut written_bytes) = (None, None);
        let seen = members(lx, |k, lx| {
            Some(match k {
                b"t_ns" => {
                    t_ns = lx.u64()?;
                    0
                }
                b"kind" => {
                    kind = event_kind(lx.raw_str()?)?;
                    1
                }
                b"tensor" => {
                    tensor = lx.usize()?;
                    2
                }
                b"bytes" => {
                    bytes = lx.u64()?;
                    3
                }
                b"pool" => {
                    pool = lx.raw_str()?;
                    4
                }
                b"offset" => {
                    offset = lx.opt_u64()?;
                    5
                }
                b"op" => {
                    op = opt_id(lx)?;
                    6
                }
                b"dma_start_ns" => {
                    dma_start_ns = lx.opt_u64()?;
                    7
                }
                b"dma_end_ns" => {
                    dma_end_ns = lx.opt_u64()?;
                    8
                }
                b"thread" => {
                    thread = lx.opt_u64()?;
                    9
                }
                b"live_bytes" => {
                    live_bytes = lx.opt_u64()?;
                    10
                }
                b"reason" => {
                    reason = if lx.null() { None } else { Some(lx.raw_str()?) };
                    11
                }
                b"written_bytes" => {
                    written_bytes = lx.opt_u64()?;
                    12
                }
                _ => return None,
            })
        })?;
        if !has_first(&seen, 5) {
            return None;
        }
        let e = EventRef {
            t_ns,
            kind,
            tensor,
            bytes,
            pool: "",
            offset,
            op,
            dma_start_ns,
            dma_end_ns,
            thread,
            live_bytes,
            reason: None,
            written_bytes,
        };
        self.push_raw(&e, pool, reason)
    }
}

fn bound(s: &str) -> Option<super::Bound> {
    Some(match s {
        "compute" => super::Bound::Compute,
        "memory" => super::Bound::Memory,
        _ => return None,
    })
}

impl PlainRows for Ops {
    fn push_plain(&mut self, lx: &mut Lex<'_>, s: &mut Scratch) -> Option<()> {
        let [ins, outs, streamed] = &mut s.lists;
        for l in [&mut *ins, &mut *outs, &mut *streamed] {
            l.clear();
        }
        let (mut id, mut name, mut op_type) = (0, "", "");
        let (mut start_ns, mut end_ns, mut stall_ns) = (0, 0, 0);
        let (mut flops, mut bnd, mut unit) = (None, None, None);
        let (mut parent, mut self_ns, mut contention_ns) = (None, None, None);
        let seen = members(lx, |k, lx| {
            Some(match k {
                b"id" => {
                    id = lx.usize()?;
                    0
                }
                b"name" => {
                    name = lx.str()?;
                    1
                }
                b"op_type" => {
                    op_type = lx.str()?;
                    2
                }
                b"start_ns" => {
                    start_ns = lx.u64()?;
                    3
                }
                b"end_ns" => {
                    end_ns = lx.u64()?;
                    4
                }
                b"stall_ns" => {
                    stall_ns = lx.u64()?;
                    5
                }
                b"inputs" => {
                    lx.ids(ins)?;
                    6
                }
                b"outputs" => {
                    lx.ids(outs)?;
                    7
                }
                b"streamed" => {
                    lx.ids(streamed)?;
                    8
                }
                b"flops" => {
                    flops = if lx.null() { None } else { Some(lx.f64()?) };
                    9
                }
                b"bound" => {
                    bnd = opt_str(lx)?
                        .map(bound)
                        .map_or(Some(None), |b| b.map(Some))?;
                    10
                }
                b"unit" => {
                    unit = opt_str(lx)?.map(|u| super::Unit(u.into()));
                    11
                }
                b"parent" => {
                    parent = opt_id(lx)?;
                    12
                }
                b"self_ns" => {
                    self_ns = lx.opt_u64()?;
                    13
                }
                b"contention_ns" => {
                    contention_ns = lx.opt_u64()?;
                    14
                }
                _ => return None,
            })
        })?;
        if !has_first(&seen, 5) {
            return None;
        }
        self.push_ref(OpRef {
            id,
            name,
            op_type,
            start_ns,
            end_ns,
            stall_ns,
            inputs: ins,
            outputs: outs,
            streamed,
            flops,
            bound: bnd,
            unit: unit.as_ref(),
            parent,
            self_ns,
            contention_ns,
        });
        Some(())
    }
}

fn tensor_kind(s: &str) -> Option<TensorKind> {
    Some(match s {
        "input" => TensorKind::Input,
        "activation" => TensorKind::Activation,
        "weight" => TensorKind::Weight,
        "output" => TensorKind::Output,
        _ => return None,
    })
}

impl PlainRows for Tensors {
    fn push_plain(&mut self, lx: &mut Lex<'_>, s: &mut Scratch) -> Option<()> {
        let consumers = &mut s.lists[0];
        consumers.clear();
        let (mut id, mut name, mut bytes) = (0, "", 0);
        let (mut kind, mut pool, mut producer) = (TensorKind::Activation, "", None);
        let seen = members(lx, |k, lx| {
            Some(match k {
                b"id" => {
                    id = lx.usize()?;
                    0
                }
                b"name" => {
                    name = lx.str()?;
                    1
                }
                b"bytes" => {
                    bytes = lx.u64()?;
                    2
                }
                b"kind" => {
                    kind = tensor_kind(lx.str()?)?;
                    3
                }
                b"pool" => {
                    pool = lx.str()?;
                    4
                }
                b"producer" => {
                    producer = opt_id(lx)?;
                    5
                }
                b"consumers" => {
                    lx.ids(consumers)?;
                    6
                }
                _ => return None,
            })
        })?;
        if !has_first(&seen, 5) {
            return None;
        }
        self.push_ref(TensorRef {
            id,
            name,
            bytes,
            kind,
            pool,
            producer,
            consumers,
        });
        Some(())
    }
}

/// A counter's samples, `[[t, v], ...]`.
fn samples(lx: &mut Lex<'_>, out: &mut Vec<(u64, f64)>) -> Option<()> {
    lx.eat(b'[')?;
    if lx.eat(b']').is_some() {
        return Some(());
    }
    loop {
        lx.eat(b'[')?;
        let t = lx.u64()?;
        lx.eat(b',')?;
        let v = lx.f64()?;
        lx.eat(b']')?;
        out.push((t, v));
        match lx.peek()? {
            b',' => lx.at += 1,
            b']' => {
                lx.at += 1;
                return Some(());
            }
            _ => return None,
        }
    }
}

impl PlainRows for Vec<Counter> {
    fn push_plain(&mut self, lx: &mut Lex<'_>, _: &mut Scratch) -> Option<()> {
        let (mut name, mut unit, mut pool) = (None, None, None);
        let mut s = Vec::new();
        let seen = members(lx, |k, lx| {
            Some(match k {
                b"name" => {
                    name = Some(lx.str()?);
                    0
                }
                b"unit" => {
                    unit = Some(lx.str()?);
                    1
                }
                b"samples" => {
                    samples(lx, &mut s)?;
                    2
                }
                b"pool" => {
                    pool = opt_str(lx)?;
                    3
                }
                _ => return None,
            })
        })?;
        if !has_first(&seen, 3) {
            return None;
        }
        self.push(Counter {
            name: name?.to_string(),
            unit: unit?.to_string(),
            pool: pool.map(str::to_string),
            samples: s,
        });
        Some(())
    }
}

/// What serde skips (an array the trace does not know) is read by serde.
impl PlainRows for serde::de::IgnoredAny {
    fn push_plain(&mut self, _: &mut Lex<'_>, _: &mut Scratch) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One member as text: how a writer might spell `key: value`: one of
    /// `good` (plain or not, all valid) mostly, one of `odd` (what serde
    /// may refuse) one time in 41, with or without whitespace.
    fn member(
        key: &'static str,
        good: &'static [&'static str],
        odd: &'static [&'static str],
    ) -> BoxedStrategy<String> {
        let value = prop_oneof![
            40 => prop::sample::select(good),
            1 => prop::sample::select(if odd.is_empty() { good } else { odd }),
        ];
        (value, prop::sample::select(vec!["", " ", "\n\t"]))
            .prop_map(move |(v, ws)| format!("{ws}\"{key}\"{ws}:{ws}{v}{ws}"))
            .boxed()
    }

    /// An object from the first `required` of `members` and some of the
    /// rest, in any order, one time in 21 with an unknown key or a key
    /// twice.
    fn object(
        members: Vec<BoxedStrategy<String>>,
        required: usize,
    ) -> impl Strategy<Value = String> {
        let n = members.len();
        (
            members,
            prop::collection::vec(prop::bool::weighted(0.6), n),
            Just(()).prop_perturb(move |_, mut rng| {
                let mut order: Vec<usize> = (0..n).collect();
                for i in (1..n).rev() {
                    order.swap(i, rng.random_range(0..=i));
                }
                order
            }),
            prop_oneof![
                40 => Just(""),
                1 => Just("\"extra\":[1,{\"a\":\"}\"}]"),
                1 => Just("dup"),
            ],
        )
            .prop_map(move |(ms, keep, order, odd)| {
                let mut parts: Vec<String> = order
                    .iter()
                    .filter(|&&i| keep[i] || i < required)
                    .map(|&i| ms[i].clone())
                    .collect();
                match odd {
                    "" => {}
                    "dup" => {
                        if let Some(first) = parts.first().cloned() {
                            parts.push(first);
                        }
                    }
                    o => parts.push(o.to_string()),
                }
                format!("{{{}}}", parts.join(","))
            })
    }

    const N: &[&str] = &["0", "7", "123456789", "18446744073709551615"];
    const N_ODD: &[&str] = &["1.0", "-1", "1e3", "01", "18446744073709551616", "null"];
    const OPT: &[&str] = &["0", "42", "null"];
    const OPT_ODD: &[&str] = &["2.5", "\"3\"", "nul"];

    fn arb_event() -> impl Strategy<Value = String> {
        object(
            vec![
                member("t_ns", N, N_ODD),
                member(
                    "kind",
                    &["\"alloc\"", "\"evict\"", "\"stream_in\"", "\"fr\\u0065e\""],
                    &["\"reloaded\""],
                ),
                member("tensor", &["0", "3", "4294967294"], &["4294967295", "null"]),
                member("bytes", N, N_ODD),
                member(
                    "pool",
                    &["\"sram\"", "\"dram\"", "\"s\\u0072am\"", "\"caf\u{e9}\""],
                    &["null"],
                ),
                member("offset", OPT, OPT_ODD),
                member("op", &["0", "9", "null"], &["4294967295"]),
                member("dma_start_ns", OPT, OPT_ODD),
                member("dma_end_ns", OPT, OPT_ODD),
                member("thread", OPT, OPT_ODD),
                member("live_bytes", OPT, OPT_ODD),
                member("reason", &["\"capacity\"", "null", "\"a\\\"b\""], &["7"]),
                member("written_bytes", OPT, OPT_ODD),
            ],
            5,
        )
    }

    fn arb_op() -> impl Strategy<Value = String> {
        const IDS: &[&str] = &["[]", "[0]", "[1, 2,3]"];
        const IDS_ODD: &[&str] = &["null", "[1.5]", "[0,]"];
        object(
            vec![
                member("id", &["0", "5"], &["null"]),
                member(
                    "name",
                    &[
                        "\"conv\"",
                        "\"a \\\"quoted\\\" name\"",
                        "\"\u{4e2d}\u{6587}\"",
                    ],
                    &[],
                ),
                member("op_type", &["\"Conv\"", "\"\""], &["3"]),
                member("start_ns", &["0", "10"], &["1.5"]),
                member("end_ns", &["20", "99999999999"], &[]),
                member("stall_ns", &["0", "3"], &["null"]),
                member("inputs", IDS, IDS_ODD),
                member("outputs", IDS, IDS_ODD),
                member("streamed", IDS, IDS_ODD),
                member(
                    "flops",
                    &[
                        "8192.0",
                        "-0",
                        "-0.0",
                        "12",
                        "1e308",
                        "null",
                        "0.1",
                        "123456789012345678901234",
                    ],
                    &["1e999"],
                ),
                member(
                    "bound",
                    &["\"memory\"", "\"compute\"", "null"],
                    &["\"roof\""],
                ),
                member("unit", &["\"CUBE\"", "null"], &[]),
                member("parent", &["0", "null"], &[]),
                member("self_ns", &["5", "null"], &[]),
                member("contention_ns", &["5", "null"], &[]),
            ],
            5,
        )
    }

    fn arb_tensor() -> impl Strategy<Value = String> {
        object(
            vec![
                member("id", &["0", "2"], &[]),
                member("name", &["\"x\"", "\"x\\ny\"", "\"\""], &[]),
                member("bytes", &["64", "0"], &["-64"]),
                member(
                    "kind",
                    &["\"weight\"", "\"activation\"", "\"input\"", "\"output\""],
                    &["\"other\""],
                ),
                member("pool", &["\"sram\"", "\"l1\""], &[]),
                member("producer", &["null", "0", "3"], &[]),
                member("consumers", &["[]", "[0, 1]"], &["[null]"]),
            ],
            5,
        )
    }

    fn arb_counter() -> impl Strategy<Value = String> {
        object(
            vec![
                member("name", &["\"live_bytes\"", "\"bus\\u005foccupancy\""], &[]),
                member("unit", &["\"bytes\"", "\"fraction\""], &[]),
                member(
                    "samples",
                    &["[]", "[[0, 1.5], [10,2]]"],
                    &["[[0,1,2]]", "[[1.5,0]]"],
                ),
                member("pool", &["\"sram\"", "null"], &[]),
            ],
            3,
        )
    }

    /// The plain reader reads a run as serde reads it: the same rows, or
    /// a refusal where serde has an error. Says whether serde read it.
    fn agrees<L>(elems: &[String]) -> Result<bool, TestCaseError>
    where
        L: PlainRows + Default + PartialEq + std::fmt::Debug + serde::Serialize,
        L: serde::de::DeserializeOwned,
    {
        let text = format!("[{}]", elems.join(" ,"));
        let mut plain = L::default();
        let read = run_onto(text.as_bytes(), &mut plain, &mut Scratch::default());
        let serde: Result<L, _> = serde_json::from_str(&text);
        match (read, serde) {
            (Some(()), Ok(want)) => {
                prop_assert_eq!(&plain, &want);
                prop_assert_eq!(
                    serde_json::to_string(&plain).unwrap(),
                    serde_json::to_string(&want).unwrap()
                );
                Ok(true)
            }
            (None, Err(_)) => Ok(false),
            (read, serde) => {
                prop_assert!(
                    false,
                    "plain {:?}, serde {:?} on {}",
                    read,
                    serde.map(|_| ()),
                    text
                );
                Ok(false)
            }
        }
    }

    /// Runs `check` on `cases` random runs; at least a third of them must be
    /// ones serde reads (the agreement on refusals alone proves little).
    fn property(cases: u32, check: impl Fn(&mut proptest::test_runner::TestRunner) -> (u32, u32)) {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases));
        let (read, all) = check(&mut runner);
        assert!(read * 3 >= all, "only {read} of {all} runs were valid");
    }

    macro_rules! agreement {
        ($name:ident, $list:ty, $elem:expr, $n:expr) => {
            #[test]
            fn $name() {
                property(600, |runner| {
                    let counts = std::cell::Cell::new((0u32, 0u32));
                    let r = runner.run(&prop::collection::vec($elem, 1..$n), |v| {
                        let ok = agrees::<$list>(&v)?;
                        let (a, b) = counts.get();
                        counts.set((a + ok as u32, b + 1));
                        Ok(())
                    });
                    if let Err(e) = r {
                        panic!("{e}");
                    }
                    counts.get()
                });
            }
        };
    }

    agreement!(events_read_as_serde_reads_them, Events, arb_event(), 6);
    agreement!(ops_read_as_serde_reads_them, Ops, arb_op(), 5);
    agreement!(tensors_read_as_serde_reads_them, Tensors, arb_tensor(), 5);
    agreement!(
        counters_read_as_serde_reads_them,
        Vec<Counter>,
        arb_counter(),
        4
    );
}
