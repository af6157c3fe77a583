//! Plain JSON read without serde: the fast path of the trace reader
//! (`trace::read`). A trace's arrays hold millions of small objects whose
//! values are integers, short strings without escapes, and lists of
//! integers; serde's derived visitors read them at about 230 MB/s on one
//! core, this lexer at about 700 (measured on a 1M-event trace's events;
//! sonic-rs through serde read them no faster, and its document model was
//! three times slower than this on the ops).
//!
//! It reads only that plain subset and says `None` at anything else (an
//! escape, a float where an integer goes, a duplicate key, an unknown
//! key): the caller then parses that one element with serde, so what is
//! read is always what serde reads, and every error is serde's. A
//! foundation: it knows no pipeline stage.

/// A cursor over JSON text.
#[derive(Clone, Copy)]
pub(crate) struct Lex<'a> {
    b: &'a [u8],
    pub(crate) at: usize,
}

/// JSON's whitespace.
#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t')
}

impl<'a> Lex<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Lex<'a> {
        Lex { b, at: 0 }
    }

    /// The next byte that is not whitespace (left in place).
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.at) {
            if !is_ws(c) {
                return Some(c);
            }
            self.at += 1;
        }
        None
    }

    /// Takes `c` (after whitespace), or says it is not next.
    #[inline]
    pub(crate) fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek() == Some(c)).then(|| self.at += 1)
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// A string's raw bytes: no escape and no control character in it
    /// (serde reads those; an escaped string is not plain).
    #[inline]
    pub(crate) fn raw_str(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        while let Some(&c) = self.b.get(self.at) {
            match c {
                b'"' => {
                    let s = &self.b[start..self.at];
                    self.at += 1;
                    return Some(s);
                }
                b'\\' | 0..=0x1f => return None,
                _ => self.at += 1,
            }
        }
        None
    }

    /// An object key and the colon after it.
    #[inline]
    pub(crate) fn key(&mut self) -> Option<&'a [u8]> {
        let k = self.raw_str()?;
        self.eat(b':')?;
        Some(k)
    }

    /// A plain string value.
    #[inline]
    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let s = self.raw_str()?;
        // ASCII is checked a word at a time; anything else is validated.
        std::str::from_utf8(s).ok()
    }

    /// A non-negative integer as JSON spells one (no sign, no leading
    /// zero, no fraction or exponent) that fits in a `u64`.
    #[inline]
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let start = self.at;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.at) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(d))?;
            self.at += 1;
        }
        let n = self.at - start;
        // A fraction or exponent makes it a float: serde's to read.
        let next = self.b.get(self.at).copied();
        if n == 0 || (n > 1 && self.b[start] == b'0') || matches!(next, Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(v)
    }

    /// An integer that must fit in a `usize` (an id).
    #[inline]
    pub(crate) fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok()
    }

    /// A number read as an `f64`, as serde reads one into an `f64` field
    /// (correctly rounded: the crate's serde_json has `float_roundtrip`).
    pub(crate) fn f64(&mut self) -> Option<f64> {
        self.peek()?;
        let start = self.at;
        if self.b.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits = |l: &mut Lex| {
            let s = l.at;
            while l.b.get(l.at).is_some_and(u8::is_ascii_digit) {
                l.at += 1;
            }
            l.at - s
        };
        let int_start = self.at;
        let n = digits(self);
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return None;
        }
        if self.b.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if matches!(self.b.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.b.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        // The text is ASCII by construction.
        let text = std::str::from_utf8(&self.b[start..self.at]).ok()?;
        let v: f64 = text.parse().ok()?;
        // serde refuses a number past f64's range; so does the plain path.
        v.is_finite().then_some(v)
    }

    /// `null`, taken if it is next.
    #[inline]
    pub(crate) fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.b[self.at..].starts_with(b"null") {
            self.at += 4;
            return true;
        }
        false
    }

    /// An optional integer: `null` or one.
    #[inline]
    pub(crate) fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null() {
            return Some(None);
        }
        self.u64().map(Some)
    }

    /// A list of ids (`[1, 2, 3]`) appended to `out`.
    pub(crate) fn ids(&mut self, out: &mut Vec<usize>) -> Option<()> {
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            out.push(self.usize()?);
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// After an object's member: true at `}` (taken), false at `,`
    /// (taken), `None` at anything else.
    #[inline]
    pub(crate) fn member_end(&mut self) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(false)
            }
            b'}' => {
                self.at += 1;
                Some(true)
            }
            _ => None,
        }
    }
}

/// Which of up to 64 keys an object has had: a second one is serde's
/// "duplicate field" error, so the plain path leaves it to serde.
#[derive(Default, Clone, Copy)]
pub(crate) struct Seen(u64);

impl Seen {
    /// Marks key `k`; `None` if it was seen before.
    #[inline]
    pub(crate) fn mark(&mut self, k: u32) -> Option<()> {
        let bit = 1u64 << k;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }

    #[inline]
    pub(crate) fn has(&self, k: u32) -> bool {
        self.0 & (1u64 << k) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_plain_only_as_json_spells_them() {
        let u = |s: &str| Lex::new(s.as_bytes()).u64();
        assert_eq!(u("0"), Some(0));
        assert_eq!(u(" 42,"), Some(42));
        assert_eq!(u("18446744073709551615"), Some(u64::MAX));
        for no in ["18446744073709551616", "01", "-1", "1.0", "1e3", "", "x"] {
            assert_eq!(u(no), None, "{no}");
        }
    }

    #[test]
    fn floats_read_as_serde_reads_them() {
        for s in [
            "0",
            "8192.0",
            "-0.5",
            "1e300",
            "1.5E-7",
            "123456789012345678901234",
            "0.1",
        ] {
            let want: f64 = serde_json::from_str(s).unwrap();
            assert_eq!(Lex::new(s.as_bytes()).f64(), Some(want), "{s}");
        }
        for no in ["01", "1.", ".5", "1e", "-", "1e999", "nan"] {
            assert_eq!(Lex::new(no.as_bytes()).f64(), None, "{no}");
        }
    }

    #[test]
    fn strings_with_escapes_or_controls_are_not_plain() {
        assert_eq!(Lex::new(br#""sram""#).str(), Some("sram"));
        assert_eq!(
            Lex::new("\"caf\u{e9}\"".as_bytes()).str(),
            Some("caf\u{e9}")
        );
        assert_eq!(Lex::new(br#""a\"b""#).str(), None);
        assert_eq!(Lex::new(b"\"a\x01b\"").str(), None);
        assert_eq!(Lex::new(b"\"a\xffb\"").str(), None);
        assert_eq!(Lex::new(br#""open"#).str(), None);
    }

    #[test]
    fn id_lists_and_nulls() {
        let mut v = Vec::new();
        assert_eq!(Lex::new(b" [ 1 , 2,3 ] ").ids(&mut v), Some(()));
        assert_eq!(v, [1, 2, 3]);
        v.clear();
        assert_eq!(Lex::new(b"[]").ids(&mut v), Some(()));
        assert!(v.is_empty());
        for no in ["[1,]", "[,1]", "[1 2]", "[1", "[null]"] {
            assert_eq!(Lex::new(no.as_bytes()).ids(&mut Vec::new()), None, "{no}");
        }
        assert_eq!(Lex::new(b"null").opt_u64(), Some(None));
        assert_eq!(Lex::new(b"nul").opt_u64(), None);
        let mut s = Seen::default();
        assert_eq!(s.mark(3), Some(()));
        assert_eq!(s.mark(3), None);
        assert!(s.has(3) && !s.has(4));
    }
}
