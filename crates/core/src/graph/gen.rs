//! Deterministic synthetic graphs for benchmarks and scale tests
//! (`spillscope gen`): a transformer-like stack whose encoder output is read
//! by every decoder block, so evictions and reloads happen at any size.

use super::{Graph, GraphBuilder, OpSpec, TensorKind, TensorSpec};

struct B {
    b: GraphBuilder,
}

impl B {
    fn t(&mut self, name: String, shape: &[u64], kind: Option<TensorKind>) -> String {
        self.b.tensor(TensorSpec {
            name: name.clone().into(),
            bytes: shape.iter().product::<u64>() * 4,
            kind,
            shape: Some(shape.to_vec()),
            dtype: Some("f32".into()),
        });
        name
    }
    fn op(&mut self, name: String, op_type: &str, ins: Vec<String>, outs: Vec<String>) {
        self.b.op(OpSpec {
            name: name.into(),
            op_type: op_type.into(),
            inputs: ins.into_iter().map(Into::into).collect(),
            outputs: outs.into_iter().map(Into::into).collect(),
            flops: None,
        });
    }
}

/// An encoder-decoder transformer with `blocks` decoder blocks (9 ops each)
/// after 2 encoder blocks; `seq` x `d` activations, 4x FFN.
pub fn transformer_like(blocks: usize, seq: u64, d: u64) -> Graph {
    let mut g = B {
        b: GraphBuilder::new(format!("transformer_like_{blocks}")),
    };
    let block = |g: &mut B, p: &str, x: String, memory: Option<&str>| -> String {
        let wq = g.t(format!("{p}.wqkv"), &[d, 3 * d], Some(TensorKind::Weight));
        let qkv = g.t(format!("{p}.qkv"), &[seq, 3 * d], None);
        g.op(
            format!("{p}.proj"),
            "MatMul",
            vec![x.clone(), wq],
            vec![qkv.clone()],
        );
        let ctx = g.t(format!("{p}.ctx"), &[seq, d], None);
        let mut ins = vec![qkv];
        if let Some(m) = memory {
            ins.push(m.to_string());
        }
        g.op(format!("{p}.attn"), "Attention", ins, vec![ctx.clone()]);
        let r1 = g.t(format!("{p}.res1"), &[seq, d], None);
        g.op(format!("{p}.add1"), "Add", vec![x, ctx], vec![r1.clone()]);
        let n1 = g.t(format!("{p}.norm1"), &[seq, d], None);
        g.op(
            format!("{p}.ln1"),
            "LayerNormalization",
            vec![r1],
            vec![n1.clone()],
        );
        let w1 = g.t(format!("{p}.w1"), &[d, 4 * d], Some(TensorKind::Weight));
        let h = g.t(format!("{p}.h"), &[seq, 4 * d], None);
        g.op(
            format!("{p}.fc1"),
            "MatMul",
            vec![n1.clone(), w1],
            vec![h.clone()],
        );
        let a = g.t(format!("{p}.act"), &[seq, 4 * d], None);
        g.op(format!("{p}.gelu"), "Gelu", vec![h], vec![a.clone()]);
        let w2 = g.t(format!("{p}.w2"), &[4 * d, d], Some(TensorKind::Weight));
        let o = g.t(format!("{p}.o"), &[seq, d], None);
        g.op(format!("{p}.fc2"), "MatMul", vec![a, w2], vec![o.clone()]);
        let r2 = g.t(format!("{p}.res2"), &[seq, d], None);
        g.op(format!("{p}.add2"), "Add", vec![n1, o], vec![r2.clone()]);
        let n2 = g.t(format!("{p}.out"), &[seq, d], None);
        g.op(
            format!("{p}.ln2"),
            "LayerNormalization",
            vec![r2],
            vec![n2.clone()],
        );
        n2
    };
    let mut x = g.t("src".into(), &[seq, d], Some(TensorKind::Input));
    for i in 0..2 {
        x = block(&mut g, &format!("enc{i}"), x, None);
    }
    let memory = x;
    let mut y = g.t("tgt".into(), &[seq, d], Some(TensorKind::Input));
    for i in 0..blocks {
        y = block(&mut g, &format!("dec{i}"), y, Some(&memory));
    }
    g.b.output(y);
    g.b.build().expect("generated graphs are valid")
}

/// The transformer-like graph with about `ops` ops (18 encoder ops + 9 per block).
pub fn transformer_with_ops(ops: usize) -> Graph {
    transformer_like(ops.saturating_sub(18).div_ceil(9).max(1), 64, 128)
}

/// A plain chain of `n` elementwise ops over `bytes`-sized tensors.
pub fn chain(n: usize, bytes: u64) -> Graph {
    let mut b = GraphBuilder::new(format!("chain_{n}"));
    for i in 0..=n {
        b.tensor(TensorSpec {
            name: compact_str::format_compact!("t{i}"),
            bytes,
            kind: None,
            shape: None,
            dtype: None,
        });
    }
    for i in 0..n {
        b.op(OpSpec {
            name: compact_str::format_compact!("op{i}"),
            op_type: "Relu".into(),
            inputs: vec![compact_str::format_compact!("t{i}")],
            outputs: vec![compact_str::format_compact!("t{}", i + 1)],
            flops: None,
        });
    }
    b.output(format!("t{n}"));
    b.build().expect("generated graphs are valid")
}

/// One producer read by `n` consumers whose outputs one op joins: a wide
/// fan-out (the join's working set is every branch output).
pub fn fanout(n: usize, bytes: u64) -> Graph {
    let mut b = GraphBuilder::new(format!("fanout_{n}"));
    let t = |b: &mut GraphBuilder, name: String| {
        b.tensor(TensorSpec {
            name: name.into(),
            bytes,
            kind: None,
            shape: None,
            dtype: None,
        });
    };
    t(&mut b, "x".into());
    t(&mut b, "s".into());
    t(&mut b, "out".into());
    b.op(OpSpec {
        name: "src".into(),
        op_type: "Relu".into(),
        inputs: vec!["x".into()],
        outputs: vec!["s".into()],
        flops: None,
    });
    for i in 0..n {
        t(&mut b, format!("y{i}"));
        b.op(OpSpec {
            name: compact_str::format_compact!("branch{i}"),
            op_type: "Relu".into(),
            inputs: vec!["s".into()],
            outputs: vec![compact_str::format_compact!("y{i}")],
            flops: None,
        });
    }
    b.op(OpSpec {
        name: "join".into(),
        op_type: "Concat".into(),
        inputs: (0..n)
            .map(|i| compact_str::format_compact!("y{i}"))
            .collect(),
        outputs: vec!["out".into()],
        flops: None,
    });
    b.output("out");
    b.build().expect("generated graphs are valid")
}

/// A DenseNet-like CNN (batch 1, 224x224 input, growth 32): dense blocks of
/// `layers[i]` layers, each BN-ReLU-Conv1x1-BN-ReLU-Conv3x3 over the concat
/// of every earlier feature map of its block, transitions halving channels
/// and resolution. DenseNet-121 is `[6, 12, 24, 16]`. Many tensors live
/// long and are read many times: the hard case for spill planning.
pub fn densenet_like(layers: &[usize]) -> Graph {
    let mut g = B {
        b: GraphBuilder::new(format!(
            "densenet_like_{}",
            layers
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join("_")
        )),
    };
    let w = |g: &mut B, name: String, n: u64| g.t(name, &[n], Some(TensorKind::Weight));
    let x = g.t("input".into(), &[1, 3, 224, 224], Some(TensorKind::Input));
    let w0 = w(&mut g, "conv0.w".into(), 64 * 3 * 49);
    let c0 = g.t("conv0".into(), &[1, 64, 112, 112], None);
    g.op("conv0".into(), "Conv", vec![x, w0], vec![c0.clone()]);
    let r0 = g.t("relu0".into(), &[1, 64, 112, 112], None);
    g.op("relu0".into(), "Relu", vec![c0], vec![r0.clone()]);
    let mut cur = g.t("pool0".into(), &[1, 64, 56, 56], None);
    g.op("pool0".into(), "MaxPool", vec![r0], vec![cur.clone()]);
    let (mut ch, mut hw) = (64u64, 56u64);
    for (bi, &n) in layers.iter().enumerate() {
        let mut feats = vec![cur.clone()];
        for li in 0..n {
            let p = format!("b{bi}l{li}");
            let input = if feats.len() > 1 {
                let cat = g.t(format!("{p}.cat"), &[1, ch, hw, hw], None);
                g.op(
                    format!("{p}.cat"),
                    "Concat",
                    feats.clone(),
                    vec![cat.clone()],
                );
                cat
            } else {
                feats[0].clone()
            };
            let mut y = input;
            for (step, op, c) in [
                ("bn1", "BatchNormalization", ch),
                ("relu1", "Relu", ch),
                ("conv1", "Conv", 128),
                ("bn2", "BatchNormalization", 128),
                ("relu2", "Relu", 128),
                ("conv2", "Conv", 32),
            ] {
                let out = g.t(format!("{p}.{step}"), &[1, c, hw, hw], None);
                let mut ins = vec![y];
                if op == "Conv" {
                    let cin = if step == "conv1" { ch } else { 128 };
                    ins.push(w(&mut g, format!("{p}.{step}.w"), cin * c * 9));
                }
                g.op(format!("{p}.{step}"), op, ins, vec![out.clone()]);
                y = out;
            }
            feats.push(y);
            ch += 32;
        }
        let cat = g.t(format!("b{bi}.cat"), &[1, ch, hw, hw], None);
        g.op(format!("b{bi}.cat"), "Concat", feats, vec![cat.clone()]);
        cur = cat;
        if bi + 1 < layers.len() {
            let t = format!("t{bi}");
            let r = g.t(format!("{t}.relu"), &[1, ch, hw, hw], None);
            g.op(format!("{t}.relu"), "Relu", vec![cur], vec![r.clone()]);
            let wt = w(&mut g, format!("{t}.w"), ch * ch / 2);
            ch /= 2;
            let c = g.t(format!("{t}.conv"), &[1, ch, hw, hw], None);
            g.op(format!("{t}.conv"), "Conv", vec![r, wt], vec![c.clone()]);
            hw /= 2;
            cur = g.t(format!("{t}.pool"), &[1, ch, hw, hw], None);
            g.op(
                format!("{t}.pool"),
                "AveragePool",
                vec![c],
                vec![cur.clone()],
            );
        }
    }
    let gap = g.t("gap".into(), &[1, ch], None);
    g.op(
        "gap".into(),
        "GlobalAveragePool",
        vec![cur],
        vec![gap.clone()],
    );
    let fw = w(&mut g, "fc.w".into(), ch * 1000);
    let out = g.t("logits".into(), &[1, 1000], None);
    g.op("fc".into(), "Gemm", vec![gap, fw], vec![out.clone()]);
    g.b.output(out);
    g.b.build().expect("generated graphs are valid")
}
