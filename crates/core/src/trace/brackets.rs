//! Where a JSON array's elements end, 64 bytes at a time. The scan of a
//! trace file (`super::read`) walks every byte of its large arrays to find
//! where each ends and where to cut it into runs; byte by byte that walk
//! ran at about 1.1 GB/s, and once the runs were parsed the plain way on
//! every core it was what the load waited for. This walk classifies 64
//! bytes at once (SSE2 on x86-64, which every x86-64 CPU has; a byte loop
//! on other targets), finds the strings from the prefix XOR of the quotes
//! that no backslash escapes (simdjson's method), and then looks only at
//! the brackets outside strings, and at commas only where a cut is due.
//!
//! It agrees with the byte-by-byte walk on every valid JSON text; on an
//! invalid one (a backslash outside a string) the two may cut elsewhere,
//! and the runs' parse then fails, as it does either way.

/// One 64-byte chunk's bytes of interest: bit `i` for byte `i`.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Masks {
    quote: u64,
    backslash: u64,
    /// `[` and `{`.
    open: u64,
    /// `]` and `}`.
    close: u64,
    comma: u64,
}

/// The masks by a byte loop (other targets, and the tests' reference).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn classify_bytes(c: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in c.iter().enumerate() {
        let bit = 1u64 << i;
        match b {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'[' | b'{' => m.open |= bit,
            b']' | b'}' => m.close |= bit,
            b',' => m.comma |= bit,
            _ => {}
        }
    }
    m
}

#[cfg(target_arch = "x86_64")]
fn classify(c: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks::default();
    for k in 0..4 {
        // SAFETY: SSE2 is part of x86-64 (the target enables it on every
        // x86-64 CPU); the load reads 16 bytes at offset 16 * k < 64 of
        // `c`, unaligned loads being allowed.
        unsafe {
            let v = _mm_loadu_si128(c.as_ptr().add(16 * k).cast::<__m128i>());
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            // `[` and `{` (0x5b, 0x7b), `]` and `}` (0x5d, 0x7d) differ only
            // in bit 0x20, which no other byte sets to the same value.
            let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let fold_eq = |b: u8| _mm_cmpeq_epi8(folded, _mm_set1_epi8(b as i8));
            let bits = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
            m.quote |= bits(eq(b'"'));
            m.backslash |= bits(eq(b'\\'));
            m.open |= bits(fold_eq(b'{'));
            m.close |= bits(fold_eq(b'}'));
            m.comma |= bits(eq(b','));
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
fn classify(c: &[u8; 64]) -> Masks {
    classify_bytes(c)
}

/// Bits set from each set bit of `x` up to (not including) the next one:
/// from an opening quote to its closing quote.
fn prefix_xor(mut x: u64) -> u64 {
    for s in [1, 2, 4, 8, 16, 32] {
        x ^= x << s;
    }
    x
}

/// The bytes a backslash escapes (the one after each backslash that is not
/// itself escaped) among a chunk's first `len` bytes; `carry` is 1 when the
/// chunk before ended on such a backslash. simdjson's escape scanner.
fn escaped(backslash: u64, len: u32, carry: &mut u64) -> u64 {
    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    if backslash == 0 {
        return std::mem::take(carry);
    }
    let potential = backslash & !*carry;
    let maybe = potential << 1;
    let codes = ((maybe | ODD).wrapping_sub(potential)) ^ ODD;
    let escaped = codes ^ (backslash | *carry);
    let escape = codes & backslash;
    *carry = (escape >> (len - 1)) & 1;
    escaped
}

/// Bits of the chunk at `pos0` whose offset is `from` or later.
fn from_on(from: u64, pos0: u64) -> u64 {
    match from.checked_sub(pos0) {
        None | Some(0) => !0,
        Some(d) if d >= 64 => 0,
        Some(d) => !0 << d,
    }
}

/// Where a walk through an array stands between blocks: its depth, and
/// whether the last chunk ended inside a string or after an escaping
/// backslash.
#[derive(Default)]
pub(super) struct ArrayWalk {
    depth: u32,
    /// All ones while inside a string.
    in_str: u64,
    escape: u64,
}

impl ArrayWalk {
    /// Walks `block` (at file offset `base`) of an array that starts at
    /// the walk's first byte; at each comma between the array's elements
    /// at offset `from` or later calls `cut(offset)`, which returns the
    /// next `from`. The index of the byte that closes the array, if it is
    /// in this block.
    pub(super) fn walk(
        &mut self,
        block: &[u8],
        base: u64,
        from: &mut u64,
        mut cut: impl FnMut(u64) -> u64,
    ) -> Option<usize> {
        let mut k = 0;
        while k < block.len() {
            let mut pad = [0u8; 64];
            let len = (block.len() - k).min(64);
            let chunk = match block[k..].first_chunk::<64>() {
                Some(c) => c,
                None => {
                    // Zeros are none of the bytes of interest, and leave
                    // the string state as the last byte did.
                    pad[..len].copy_from_slice(&block[k..]);
                    &pad
                }
            };
            let m = classify(chunk);
            let quote = m.quote & !escaped(m.backslash, len as u32, &mut self.escape);
            let in_str = prefix_xor(quote) ^ self.in_str;
            self.in_str = ((in_str as i64) >> 63) as u64;
            let (open, close, comma) = (m.open & !in_str, m.close & !in_str, m.comma & !in_str);
            let pos0 = base + k as u64;
            let mut todo = open | close | (comma & from_on(*from, pos0));
            while todo != 0 {
                let b = todo.trailing_zeros();
                let bit = 1u64 << b;
                todo &= todo - 1;
                if open & bit != 0 {
                    self.depth += 1;
                } else if close & bit != 0 {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(k + b as usize);
                    }
                } else if self.depth == 1 {
                    *from = cut(pos0 + u64::from(b));
                    todo &= !comma | from_on(*from, pos0);
                }
            }
            k += 64;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-by-byte walk: the depth-1 commas at or past each `from`,
    /// and where the array closes.
    fn reference(text: &[u8], every: u64) -> (Vec<u64>, Option<usize>) {
        let (mut depth, mut in_str, mut esc) = (0u32, false, false);
        let (mut cuts, mut from) = (Vec::new(), every);
        for (i, &c) in text.iter().enumerate() {
            if in_str {
                match (esc, c) {
                    (true, _) => esc = false,
                    (false, b'\\') => esc = true,
                    (false, b'"') => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return (cuts, Some(i));
                    }
                }
                b',' if depth == 1 && i as u64 >= from => {
                    cuts.push(i as u64);
                    from = i as u64 + every;
                }
                _ => {}
            }
        }
        (cuts, None)
    }

    /// This walk over `text` in blocks cut at `cuts`.
    fn walked(text: &[u8], blocks: &[usize], every: u64) -> (Vec<u64>, Option<usize>) {
        let mut w = ArrayWalk::default();
        let (mut found, mut from, mut start) = (Vec::new(), every, 0);
        for &end in blocks.iter().chain([&text.len()]) {
            let end = end.clamp(start, text.len());
            let closed = w.walk(&text[start..end], start as u64, &mut from, |at| {
                found.push(at);
                at + every
            });
            if let Some(k) = closed {
                return (found, Some(start + k));
            }
            start = end;
        }
        (found, None)
    }

    #[test]
    fn the_chunk_classifier_matches_the_byte_loop() {
        let mut c = [0u8; 64];
        for seed in 0..2000u64 {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for b in c.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pick = b"\"\\[]{},:a0 \x7b\x5b\x7d\x5d\xff";
                *b = pick[(x % pick.len() as u64) as usize];
            }
            assert_eq!(classify(&c), classify_bytes(&c));
        }
    }

    /// Texts of arrays made of the bytes that matter, with escapes.
    fn arb_array() -> impl Strategy<Value = Vec<u8>> {
        let s = prop::collection::vec(
            prop::sample::select(vec![
                "a", "\\\\", "\\\"", "]", "[", ",", "{", "}", "\\n", " ",
            ]),
            0..6,
        )
        .prop_map(|p| format!("\"{}\"", p.concat()));
        let leaf = prop_oneof![s, Just("1".to_string()), Just("[]".to_string())];
        let value = leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(inner, 0..3).prop_map(|v| {
                    let kv: Vec<String> = v.iter().map(|x| format!("\"k\\\\\":{x}")).collect();
                    format!("{{{}}}", kv.join(" , "))
                }),
            ]
        });
        prop::collection::vec(value, 0..30)
            .prop_map(|v| format!("[{}] tail, ]", v.join(",")).into_bytes())
    }

    proptest! {
        /// Same cuts and the same close as the byte-by-byte walk, however
        /// the text is cut into blocks and however often a cut is due.
        #[test]
        fn walks_as_the_byte_loop_does(
            text in arb_array(),
            blocks in prop::collection::vec(0usize..400, 0..4),
            every in 1u64..40,
        ) {
            let mut blocks = blocks;
            blocks.sort_unstable();
            let want = reference(&text, every);
            prop_assert!(want.1.is_some());
            prop_assert_eq!(walked(&text, &blocks, every), want.clone());
            prop_assert_eq!(walked(&text, &[], every), want);
        }
    }

    #[test]
    fn runs_of_backslashes_across_chunk_ends() {
        for n in 0..130 {
            for at in 50..70 {
                let mut t = b"[\"".to_vec();
                t.resize(at, b'a');
                t.extend(std::iter::repeat_n(b'\\', n));
                t.extend_from_slice(b"\",\"],\",1],");
                let want = reference(&t, 1);
                assert_eq!(walked(&t, &[], 1), want, "{n} at {at}");
                assert_eq!(walked(&t, &[at + n / 2], 1), want, "{n} at {at}, cut");
            }
        }
    }
}
