use spillscope::npu::schedule::{
    demand_schedule, demand_targets, l0_violation, peak_residency, schedule, ScheduleOptions,
    Tiebreak,
};
use spillscope::npu::Kernel;
fn main() {
    for c in ["Matmul_Case0", "FlashAttention_Case0", "Conv_Case0"] {
        let k = Kernel::load(std::path::Path::new(&format!(
            "../shared/data/npu/{c}.json"
        )))
        .unwrap();
        let file = k.topological_order().unwrap();
        println!(
            "{c}: file-order peak {} l0 {:?}",
            peak_residency(&k, &file),
            l0_violation(&k, &file).is_some()
        );
        let t = std::time::Instant::now();
        match demand_schedule(&k, &demand_targets(&k)) {
            Ok(o) => {
                println!(
                    "  demand: peak {} l0 {:?} n {} in {:?}",
                    peak_residency(&k, &o),
                    l0_violation(&k, &o),
                    o.len(),
                    t.elapsed()
                );
                full(&k, &o);
                if std::env::var_os("PEAK2").is_some() && c.starts_with("Conv") {
                    live_at_peak(&k, &o);
                }
            }
            Err(e) => println!("  demand: {e}"),
        }
        for tb in [Tiebreak::FileOrder, Tiebreak::CriticalPath] {
            let t = std::time::Instant::now();
            match schedule(
                &k,
                ScheduleOptions {
                    tiebreak: tb,
                    seed: 0,
                },
            ) {
                Ok(o) => {
                    println!(
                        "  {tb:?}: peak {} l0 {:?} n {} in {:?}",
                        peak_residency(&k, &o),
                        l0_violation(&k, &o),
                        o.len(),
                        t.elapsed()
                    );
                    if std::env::var_os("PEAK").is_some() && c.starts_with("Conv") {
                        live_at_peak(&k, &o);
                    }
                }
                Err(e) => println!("  {tb:?}: {e}"),
            }
        }
    }
}
#[allow(dead_code)]
fn live_at_peak(k: &Kernel, order: &[usize]) {
    use spillscope::npu::NodeKind;
    let (mut cur, mut peak, mut at) = (0i64, 0i64, 0usize);
    for (pos, &i) in order.iter().enumerate() {
        match &k.nodes[i].kind {
            NodeKind::Alloc { size, ty, .. } if !ty.is_l0() => cur += *size as i64,
            NodeKind::Free { size, ty, .. } if !ty.is_l0() => cur -= *size as i64,
            _ => {}
        }
        if cur > peak {
            peak = cur;
            at = pos;
        }
    }
    let mut live = std::collections::BTreeMap::new();
    for &i in &order[..=at] {
        match &k.nodes[i].kind {
            NodeKind::Alloc { buf, size, ty } if !ty.is_l0() => {
                live.insert(*buf, *size);
            }
            NodeKind::Free { buf, .. } => {
                live.remove(buf);
            }
            _ => {}
        }
    }
    let pos: std::collections::HashMap<usize, usize> =
        order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    println!("peak {peak} at {at}: {} live", live.len());
    for (b, s) in live.iter().take(40) {
        let bb = k.buffer(*b).unwrap();
        let users: Vec<String> = bb
            .users
            .iter()
            .map(|&u| format!("{}{}@{}", k.nodes[u].op, u, pos[&u]))
            .collect();
        println!(
            "  buf {b} size {s} alloc@{} free@{} users {:?}",
            pos[&bb.alloc], pos[&bb.free], users
        );
    }
}
#[allow(dead_code)]
pub fn full(k: &Kernel, order: &[usize]) {
    let t = std::time::Instant::now();
    match spillscope::npu::alloc::allocate(k, order) {
        Ok(a) => match spillscope::npu::check::evaluate(k, &a.solution) {
            Ok(m) => println!(
                "    alloc: traffic {} (alloc says {}) spills {} cycles {} peak {} in {:?}",
                m.extra_traffic,
                a.extra_traffic,
                m.spill_count,
                m.total_cycles,
                m.peak_residency,
                t.elapsed()
            ),
            Err(e) => println!("    check failed: {e}"),
        },
        Err(e) => println!("    alloc failed: {e}"),
    }
}
