//! Names that stay distinguishable in narrow columns. Graph names are paths
//! (`/encoder/layers/encoder_layer_11/self_attention/Softmax`) whose rows in
//! a list share most of their text; cutting them from the front or the back
//! makes every row read the same. [`elide_all`] shortens the names shown
//! together: it drops the path segments all of them share (keeping each
//! name's last segment, which says what it is), abbreviates what is left
//! keeping digits (layer and block indices), and cuts from the middle only
//! as a last resort, checking that rows that differed still differ.
//!
//! A foundation: imports nothing of the crate. Every list, table and lane
//! label of the explorer, and the CLI's tables, use it.

/// What marks an elided stretch.
pub const ELLIPSIS: &str = "…";
/// The same in ASCII-only output.
pub const ELLIPSIS_ASCII: &str = "..";

fn len(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `width` characters from the middle: its start and end kept.
pub fn cut_middle(s: &str, width: usize, ell: &str) -> String {
    let n = len(s);
    if n <= width {
        return s.to_string();
    }
    let e = len(ell);
    if width <= e {
        return s.chars().skip(n - width).collect();
    }
    let keep = width - e;
    // More of the end: names differ most at their ends.
    let head = keep / 3;
    let tail = keep - head;
    let mut out: String = s.chars().take(head).collect();
    out.push_str(ell);
    out.extend(s.chars().skip(n - tail));
    out
}

/// One name alone in `width` characters: its segments abbreviated
/// (indices kept) before anything is cut.
pub fn elide(name: &str, width: usize, ascii: bool) -> String {
    let ell = if ascii { ELLIPSIS_ASCII } else { ELLIPSIS };
    if len(name) <= width {
        return name.to_string();
    }
    let sep = separator(&[name]);
    let parts: Parts = name.split(sep).map(|p| Some(p.to_string())).collect();
    fit(parts, false, width, ell, sep, true)
}

/// A segment shortened but its trailing index kept: `denseblock12` ->
/// `den…12` (`level` 1) or `d12` (level 2); `self_attention` -> `sel…` or `s`.
fn abbreviate(seg: &str, ell: &str, level: u8) -> String {
    let digits: String = {
        let rev: String = seg
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '_')
            .collect();
        rev.chars().rev().collect()
    };
    let stem = len(seg) - len(&digits);
    let out = if level == 1 {
        let keep = stem.min(3);
        seg.chars().take(keep).collect::<String>() + ell + &digits
    } else {
        let keep = stem.min(1);
        seg.chars().take(keep).collect::<String>() + digits.trim_start_matches(['_', '.'])
    };
    if len(&out) < len(seg) {
        out
    } else {
        seg.to_string()
    }
}

/// `own;fused;...` as `own`, keeping a trailing ` [tag]`.
fn own_part(name: &str) -> String {
    let (body, tag) = match name.rfind(" [") {
        Some(i) if name.ends_with(']') => name.split_at(i),
        _ => (name, ""),
    };
    let own = body.split(';').find(|p| !p.is_empty()).unwrap_or(body);
    format!("{own}{tag}")
}

/// The names shown together (the visible rows of a list), each shortened
/// to at most `width` characters so that rows whose names differ still read
/// differently. Names that fit are left whole.
pub fn elide_all(names: &[&str], width: usize, ascii: bool) -> Vec<String> {
    let ell = if ascii { ELLIPSIS_ASCII } else { ELLIPSIS };
    if names.iter().all(|n| len(n) <= width) {
        return names.iter().map(|n| n.to_string()).collect();
    }
    // TensorFlow names a fused op `own;fused;fused` (TFLite files, Vela):
    // a name too long keeps its own part (and a trailing ` [..]` tag).
    if names.iter().any(|n| len(n) > width && n.contains(';')) {
        let own: Vec<String> = names
            .iter()
            .map(|n| {
                if len(n) > width {
                    own_part(n)
                } else {
                    n.to_string()
                }
            })
            .collect();
        let own: Vec<&str> = own.iter().map(String::as_str).collect();
        return elide_all(&own, width, ascii);
    }
    let sep = separator(names);
    let segs: Vec<Vec<&str>> = names.iter().map(|n| n.split(sep).collect()).collect();
    // Segments (by position from the start) every name shares; the last
    // segments, when all names end alike.
    let shared = |i: usize| {
        let first = segs[0].get(i);
        first.is_some() && segs.iter().all(|s| s.len() > i + 1 && s.get(i) == first)
    };
    let max_depth = segs.iter().map(|s| s.len()).max().unwrap_or(0);
    let shared_pos: Vec<bool> = (0..max_depth).map(shared).collect();
    let last_shared = segs.iter().all(|s| s.last() == segs[0].last());
    let fitted: Vec<Option<(String, Parts)>> = names
        .iter()
        .zip(&segs)
        .map(|(name, s)| {
            (len(name) > width).then(|| shorten(s, &shared_pos, last_shared, width, ell, sep))
        })
        .collect();
    // Rows read alike when a segment is shortened alike everywhere: the
    // shortest form an interior segment took in any row is used in all the
    // rows that had to be shortened, and those are fitted again.
    let mut short: std::collections::HashMap<&str, String> = Default::default();
    for (s, f) in segs.iter().zip(&fitted) {
        let Some((_, parts)) = f else { continue };
        for (orig, p) in s.iter().zip(parts).take(s.len().saturating_sub(1)) {
            if let Some(p) = p.as_ref().filter(|p| p.as_str() != *orig) {
                if short.get(orig).is_none_or(|x| len(p) < len(x)) {
                    short.insert(orig, p.clone());
                }
            }
        }
    }
    let out: Vec<String> = names
        .iter()
        .zip(&segs)
        .zip(fitted)
        .map(|((name, s), f)| match f {
            None => name.to_string(),
            Some((text, _)) if short.is_empty() => text,
            Some(_) => {
                let last = s.len().saturating_sub(1);
                let alike: Vec<&str> = s
                    .iter()
                    .enumerate()
                    .map(|(i, seg)| match short.get(seg) {
                        Some(x) if i < last => x.as_str(),
                        _ => seg,
                    })
                    .collect();
                shorten(&alike, &shared_pos, last_shared, width, ell, sep).0
            }
        })
        .collect();
    distinct_or_cut(names, out, width, ell, sep)
}

/// What splits the names into segments: `/` for graph paths, `.` for
/// module paths (`enc0.ffn.act`) when no name has a `/`.
fn separator(names: &[&str]) -> char {
    if names.iter().any(|n| n.contains('/')) || !names.iter().any(|n| n.contains('.')) {
        '/'
    } else {
        '.'
    }
}

/// Kept segments of a name; `None` is a dropped stretch (one ellipsis).
type Parts = Vec<Option<String>>;

fn join(parts: &Parts, ell: &str, sep: char) -> String {
    let mut v: Vec<&str> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        match p {
            Some(s) => v.push(s),
            // One ellipsis per dropped stretch, none for a leading "".
            None if i > 0 && parts[i - 1].is_none() => {}
            None => v.push(ell),
        }
    }
    // "/…" at the start reads as "…".
    if v.len() > 1 && v[0].is_empty() && v[1] == ell {
        v.remove(0);
    }
    v.join(&sep.to_string())
}

/// One name: shared segments dropped, then what is left fitted (the text
/// and the segments it kept, shortened).
fn shorten(
    s: &[&str],
    shared_pos: &[bool],
    last_shared: bool,
    width: usize,
    ell: &str,
    sep: char,
) -> (String, Parts) {
    let last = s.len().saturating_sub(1);
    let parts: Parts = s
        .iter()
        .enumerate()
        .map(|(i, seg)| {
            let drop = i < last && shared_pos.get(i).copied().unwrap_or(false) && !seg.is_empty();
            (!drop).then(|| seg.to_string())
        })
        .collect();
    fit_parts(parts, last_shared, width, ell, sep, true)
}

/// As [`fit_parts`], the text alone.
fn fit(parts: Parts, last_shared: bool, width: usize, ell: &str, sep: char, bold: bool) -> String {
    fit_parts(parts, last_shared, width, ell, sep, bold).0
}

/// Kept segments shortened until the name fits, in order of what is lost:
/// an ONNX output suffix trimmed (`Gelu_output_0` -> `Gelu…`), interior
/// segments abbreviated (keeping their indices), then (when `bold`)
/// interior segments without digits dropped, the separators around
/// ellipses dropped, the last segment abbreviated, and a middle cut.
fn fit_parts(
    mut parts: Parts,
    last_shared: bool,
    width: usize,
    ell: &str,
    sep: char,
    bold: bool,
) -> (String, Parts) {
    // A lone segment is better cut in the middle than abbreviated.
    let several = parts.iter().flatten().count() > 1;
    let mut compact = false;
    let text = |parts: &Parts, compact: bool| {
        let t = join(parts, ell, sep);
        if compact {
            compact_ellipses(&t, ell, sep)
        } else {
            t
        }
    };
    let abbreviate_all = |parts: &mut Parts, level: u8, last_too: bool, compact: bool| {
        // The longest abbreviable segment first.
        while len(&text(parts, compact)) > width {
            let n = parts.len();
            let pick = parts
                .iter()
                .enumerate()
                .filter(|(i, _)| *i + 1 < n || (last_too && several))
                .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
                .filter(|(_, p)| len(&abbreviate(p, ell, level)) < len(p))
                .max_by_key(|&(i, p)| (len(p), std::cmp::Reverse(i)))
                .map(|(i, _)| i);
            let Some(i) = pick else { break };
            parts[i] = parts[i].as_deref().map(|p| abbreviate(p, ell, level));
        }
    };
    if len(&text(&parts, false)) > width {
        if let Some(Some(l)) = parts.last_mut() {
            *l = trim_output(l, ell);
        }
    }
    abbreviate_all(&mut parts, 1, last_shared, false);
    // Still long: a last segment every name shares can go.
    if len(&text(&parts, false)) > width && last_shared && several {
        if let Some(l) = parts.last_mut() {
            *l = None;
        }
    }
    abbreviate_all(&mut parts, 2, last_shared, false);
    if bold && several && len(&text(&parts, false)) > width {
        let n = parts.len();
        for (i, p) in parts.iter_mut().enumerate() {
            let bare = p
                .as_ref()
                .is_some_and(|s| !s.is_empty() && !s.chars().any(|c| c.is_ascii_digit()));
            if i > 0 && i + 1 < n && bare {
                *p = None;
            }
        }
    }
    if len(&text(&parts, false)) > width {
        compact = true;
    }
    abbreviate_all(&mut parts, 1, true, compact);
    abbreviate_all(&mut parts, 2, true, compact);
    let t = cut_middle(&text(&parts, compact), width, ell);
    (t, parts)
}

/// `…/e0/…/m1/Gelu` as `…e0…m1/Gelu`: the separators around an ellipsis go.
fn compact_ellipses(text: &str, ell: &str, sep: char) -> String {
    let s = sep.to_string();
    let mut t = text.replace(&format!("{s}{ell}{s}"), ell);
    if let Some(rest) = t.strip_prefix(&format!("{ell}{s}")) {
        t = format!("{ell}{rest}");
    }
    t
}

/// `Gelu_output_0` -> `Gelu…`, `Split_output_2` -> `Split…2`: ONNX
/// exporters name every tensor after its op, and the suffix says nothing.
fn trim_output(seg: &str, ell: &str) -> String {
    match seg.rsplit_once("_output_") {
        Some((stem, "0")) if !stem.is_empty() => format!("{stem}{ell}"),
        Some((stem, n)) if !stem.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
            format!("{stem}{ell}{n}")
        }
        _ => seg.to_string(),
    }
}

/// Where shortening made two different names read the same, each of them
/// keeps only the segments where it differs from the others of its group
/// (and its last), fitted again; what still clashes keeps a window around
/// the first character where it differs from its group.
fn distinct_or_cut(
    names: &[&str],
    mut out: Vec<String>,
    width: usize,
    ell: &str,
    sep: char,
) -> Vec<String> {
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    for pass in 0..2 {
        let clashes = clashes(names, &out);
        if clashes.is_empty() {
            break;
        }
        for group in clashes {
            let segs: Vec<Vec<&str>> = group
                .iter()
                .map(|&i| names[i].split(sep).collect())
                .collect();
            for (k, &i) in group.iter().enumerate() {
                out[i] = if pass == 0 {
                    let mine = &segs[k];
                    let last = mine.len().saturating_sub(1);
                    let parts: Parts = mine
                        .iter()
                        .enumerate()
                        .map(|(p, seg)| {
                            let differs = segs.iter().any(|o| o.get(p) != Some(seg));
                            (p == last || differs || seg.is_empty()).then(|| seg.to_string())
                        })
                        .collect();
                    let last_alike = segs.iter().all(|o| o.last() == mine.last());
                    fit(parts, last_alike, width, ell, sep, false)
                } else {
                    window(&chars, i, width, ell)
                };
            }
        }
    }
    out
}

/// Groups of rows that read the same although their names differ.
fn clashes(names: &[&str], out: &[String]) -> Vec<Vec<usize>> {
    let mut groups: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, o) in out.iter().enumerate() {
        groups.entry(o.as_str()).or_default().push(i);
    }
    let mut v: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|g| g.iter().any(|&i| names[i] != names[g[0]]))
        .collect();
    v.sort();
    v
}

/// Name `k` cut to `width` so that the first character where it parts
/// from the name closest to it is shown: its end when that is in reach,
/// else a window starting a little before it (ellipsis at both ends).
fn window(all: &[Vec<char>], k: usize, width: usize, ell: &str) -> String {
    let me = &all[k];
    let e = len(ell);
    // Where this name stops sharing a prefix with the others.
    let d = all
        .iter()
        .enumerate()
        .filter(|(j, o)| *j != k && *o != me)
        .map(|(_, o)| o.iter().zip(me).take_while(|(a, b)| a == b).count())
        .max()
        .unwrap_or(0);
    if me.len() <= width {
        return me.iter().collect();
    }
    let room = width.saturating_sub(e);
    let tail_from = me.len() - room;
    if d >= tail_from {
        return format!("{ell}{}", me[tail_from..].iter().collect::<String>());
    }
    let room = width.saturating_sub(2 * e).max(1);
    let start = d.saturating_sub(room / 3).min(me.len() - room);
    let lead = if start > 0 { ell } else { "" };
    let body: String = me[start..start + room].iter().collect();
    let trail = if start + room < me.len() { ell } else { "" };
    format!("{lead}{body}{trail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensorflow_fused_names_keep_their_own_part() {
        let names = [
            "mobilenetv2_1.00_224_1/block_4_project_1/convolution1",
            "mobilenetv2_1.00_224_1/block_4_expand_relu_1/Relu6;mobilenetv2_1.00_224_1/block_4_expand_1/convolution",
            "mobilenetv2_1.00_224_1/block_4_expand_relu_1/Relu6;mobilenetv2_1.00_224_1/block_4_expand_1/convolution [Relu6 2]",
        ];
        let out = elide_all(&names, 40, false);
        assert!(out.iter().all(|n| n.chars().count() <= 40), "{out:?}");
        assert!(out[1].ends_with("Relu6"), "{out:?}");
        assert!(out[2].ends_with("Relu6 [Relu6 2]"), "{out:?}");
        assert_ne!(out[1], out[2]);
    }

    fn distinct(v: &[String]) -> bool {
        let mut s: Vec<&String> = v.iter().collect();
        s.sort();
        s.dedup();
        s.len() == v.len()
    }

    #[test]
    fn repeated_encoder_layers_keep_their_index() {
        let names: Vec<String> = (0..12)
            .map(|i| format!("/encoder/layers/encoder_layer_{i}/self_attention/Softmax"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        for w in [20, 24, 30] {
            let out = elide_all(&refs, w, false);
            assert!(out.iter().all(|o| o.chars().count() <= w), "{out:?}");
            assert!(distinct(&out), "{w}: {out:?}");
            assert!(out[11].contains("11"), "{out:?}");
        }
        let out = elide_all(&refs, 30, false);
        assert!(out[3].ends_with("Softmax"), "{out:?}");
    }

    #[test]
    fn dense_blocks_stay_apart() {
        let names: Vec<String> = (1..=4)
            .flat_map(|b| {
                (1..=6).map(move |l| {
                    format!("/features/denseblock{b}/denselayer{l}/conv2/Conv_output_0")
                })
            })
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        for w in [18, 24, 32] {
            let out = elide_all(&refs, w, true);
            assert!(distinct(&out), "{w}: {out:?}");
            assert!(out.iter().all(|o| o.chars().count() <= w));
            assert!(out.iter().all(|o| o.is_ascii()));
        }
    }

    #[test]
    fn resnet_blocks_stay_apart_even_narrow() {
        let names = [
            "/layer1/layer1.2/relu_2/Relu_output_0",
            "/layer1/layer1.1/relu_2/Relu_output_0",
            "/layer1/layer1.0/relu_2/Relu_output_0",
            "/layer2/layer2.0/relu_2/Relu_output_0",
            "/conv1/Conv_output_0",
            "/layer1/layer1.0/conv3/Conv_output_0",
        ];
        for w in [14, 18, 24] {
            let out = elide_all(&names, w, false);
            assert!(distinct(&out), "{w}: {out:?}");
            assert!(out.iter().all(|o| o.chars().count() <= w));
        }
    }

    #[test]
    fn module_paths_split_on_dots_and_stay_apart() {
        let names: Vec<String> = ["enc", "dec"]
            .iter()
            .flat_map(|p| (0..6).map(move |i| format!("{p}{i}.ffn.act")))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        for w in [6, 8, 11] {
            let out = elide_all(&refs, w, false);
            assert!(distinct(&out), "{w}: {out:?}");
            assert!(out.iter().all(|o| o.chars().count() <= w), "{out:?}");
        }
        let out = elide_all(&refs, 11, false);
        assert!(out[6].starts_with("dec0"), "{out:?}");
    }

    #[test]
    fn one_name_keeps_its_index() {
        let n = "/encoder/layers/encoder_layer_10/mlp/mlp.1/Gelu";
        let out = elide(n, 36, false);
        assert!(out.chars().count() <= 36, "{out}");
        assert!(out.contains("_10") && out.ends_with("Gelu"), "{out}");
        assert_eq!(elide("enc0.ffn.act", 20, false), "enc0.ffn.act");
    }

    #[test]
    fn a_window_shows_where_long_names_part() {
        let a = format!("{}X{}", "p".repeat(30), "s".repeat(30));
        let b = format!("{}Y{}", "p".repeat(30), "s".repeat(30));
        let out = elide_all(&[&a, &b], 12, true);
        assert!(distinct(&out), "{out:?}");
        assert!(out[0].contains('X') && out[1].contains('Y'), "{out:?}");
    }

    #[test]
    fn names_that_fit_are_left_whole_and_cut_middle_keeps_both_ends() {
        let v = elide_all(&["a/b", "c"], 10, false);
        assert_eq!(v, vec!["a/b", "c"]);
        assert_eq!(cut_middle("abcdefghijklmnop", 8, ".."), "ab..mnop");
        assert_eq!(abbreviate("denseblock12", "…", 1), "den…12");
        assert_eq!(abbreviate("denseblock12", "…", 2), "d12");
        assert_eq!(abbreviate("encoder_layer_11", "…", 2), "e11");
        assert_eq!(abbreviate("self_attention", "…", 1), "sel…");
        assert_eq!(abbreviate("ab", "…", 1), "ab");
        assert_eq!(trim_output("Gelu_output_0", "…"), "Gelu…");
        assert_eq!(trim_output("Split_output_2", "…"), "Split…2");
        assert_eq!(trim_output("_output_0", "…"), "_output_0");
    }
}
#[cfg(test)]
mod narrow {
    #[test]
    fn both_indices_survive_twelve_columns() {
        let mut v: Vec<String> = vec![
            "input".into(),
            "/features/transition1/Concat_output_0".into(),
            "/features/transition1/conv/Conv_output_0".into(),
        ];
        for b in 1..=2 {
            for l in 1..=3 {
                v.push(format!(
                    "/features/denseblock{b}/denselayer{l}/conv2/Conv_output_0"
                ));
            }
        }
        let r: Vec<&str> = v.iter().map(|s| s.as_str()).collect();
        let out = super::elide_all(&r, 12, false);
        assert_eq!(out[8], "…d2/d3/c2/C", "{out:?}");
        assert_eq!(out[0], "input");
        let out = super::elide_all(&r, 18, false);
        assert_eq!(out[8], "/f/d2/d3/c2/Conv…", "{out:?}");
    }
}
