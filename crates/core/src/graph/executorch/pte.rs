//! An ExecuTorch program (`.pte`) read into plain data: its first execution
//! plan's values (tensors with shape, dtype, bytes and the arena and offset
//! ExecuTorch planned them at), its kernel calls in chain 0's order, its
//! inputs and outputs and its arena sizes. Everything spillscope does with
//! a `.pte` (simulate it, import its plan, link a profile to it) starts
//! here, so the flatbuffer is verified and every index checked once.

use super::schema::{program as fb, ScalarType};
use std::path::Path;

/// The 4-byte file identifier at offset 4 of every `.pte`.
pub const IDENTIFIER: &[u8; 4] = b"ET12";

/// What a `.pte` is called in messages.
pub const FORMAT: &str = "ExecuTorch program";

/// Where ExecuTorch planned a tensor: arena `arena` (a `mem_id`; the
/// program's `non_const_buffer_sizes` index) at byte `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    pub arena: u32,
    pub offset: u64,
}

/// A tensor value.
#[derive(Debug, Clone, PartialEq)]
pub struct PteTensor {
    pub shape: Vec<u64>,
    pub dtype: &'static str,
    pub bytes: u64,
    /// Where the memory plan put it; `None` for constants and for tensors
    /// the runtime allocates itself (dynamic ones).
    pub slot: Option<Slot>,
    /// Data stored in the program (a weight or other constant).
    pub constant: bool,
}

/// A value of the plan, as far as memory is concerned.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Tensor(PteTensor),
    /// A list of tensors (value indices): `cat`'s inputs.
    List(Vec<usize>),
    /// A scalar, string, int list, or nothing: no memory of its own.
    Other,
}

/// One kernel (or delegate) call of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Its index in chain 0's instructions (ETDump's `instruction_id`).
    pub instruction: usize,
    /// `aten::convolution.out`, or `delegate:<backend>`.
    pub op: String,
    /// Its arguments (value indices), in the order the program lists them.
    pub args: Vec<usize>,
}

/// The first execution plan of a program.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The plan's name (`forward`).
    pub method: String,
    pub values: Vec<Value>,
    pub calls: Vec<Call>,
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
    /// Bytes of each arena, by `mem_id` (`[0]` is unused by ExecuTorch).
    pub arena_bytes: Vec<u64>,
    /// Instructions in chain 0 (kernel calls, moves, frees, jumps).
    pub instructions: usize,
}

impl Program {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> crate::Result<Program> {
        let bytes = crate::input::read(path)?;
        Program::parse(&bytes).map_err(|d| crate::Error::parse(path, FORMAT, d))
    }

    /// Reads a program from its bytes; the error is one line for people.
    pub fn parse(bytes: &[u8]) -> Result<Program, String> {
        if bytes.len() < 8 || &bytes[4..8] != IDENTIFIER {
            return Err("no ET12 file identifier (not an ExecuTorch program)".into());
        }
        let program = checked_extent(bytes)?;
        let opts = flatbuffers::VerifierOptions {
            max_tables: 10_000_000,
            ..Default::default()
        };
        let p = fb::root_as_program_with_opts(&opts, program)
            .map_err(|e| format!("damaged flatbuffer: {}", one_line(&e.to_string())))?;
        let plans = p
            .execution_plan()
            .ok_or("the program has no execution plan")?;
        if plans.is_empty() {
            return Err("the program has no execution plan".into());
        }
        read_plan(plans.get(0))
    }

    /// The tensor at value `i`, if it is one.
    pub fn tensor(&self, i: usize) -> Option<&PteTensor> {
        match self.values.get(i)? {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// The tensors call `c` names, lists flattened, in argument order
    /// (a tensor named twice listed once).
    pub fn tensor_args(&self, c: &Call) -> Vec<usize> {
        let mut v: Vec<usize> = Vec::with_capacity(c.args.len());
        let mut add = |i: usize| {
            if self.tensor(i).is_some() && !v.contains(&i) {
                v.push(i);
            }
        };
        for &a in &c.args {
            match &self.values[a] {
                Value::Tensor(_) => add(a),
                Value::List(items) => items.iter().for_each(|&i| add(i)),
                Value::Other => {}
            }
        }
        v
    }
}

/// The flatbuffer part of a program, after checking the extended header
/// (`eh00` after the identifier: header length, program size, where the
/// data segments start and, in newer files, their size) against the file,
/// so a program cut short is named as such instead of read without its
/// constants.
fn checked_extent(bytes: &[u8]) -> Result<&[u8], String> {
    if bytes.get(8..12) != Some(b"eh00".as_slice()) {
        return Ok(bytes); // no extended header: everything is inline
    }
    let word = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at + n)?;
        Some(b.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64))
    };
    let cut = |need: u64| {
        format!(
            "cut short: its header says it is at least {need} bytes, the file has {}",
            bytes.len()
        )
    };
    let header_len = word(12, 4).ok_or_else(|| cut(32))?;
    let program = word(16, 8).ok_or_else(|| cut(32))?;
    let segments = word(24, 8).ok_or_else(|| cut(32))?;
    let data = if header_len >= 32 {
        word(32, 8).unwrap_or(0)
    } else {
        0
    };
    let len = bytes.len() as u64;
    if program > len {
        return Err(cut(program));
    }
    if data > 0 && segments.saturating_add(data) > len {
        return Err(cut(segments.saturating_add(data)));
    }
    Ok(&bytes[..program as usize])
}

/// A verifier message on one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A value index from the file, checked against `n` values.
fn index(i: i64, n: usize, what: &str) -> Result<usize, String> {
    usize::try_from(i)
        .ok()
        .filter(|&i| i < n)
        .ok_or_else(|| format!("{what} names value {i}, but the plan has {n} values"))
}

fn read_plan(plan: fb::ExecutionPlan) -> Result<Program, String> {
    let method = plan.name().unwrap_or("forward").to_string();
    let raw = plan.values().ok_or("the plan has no values")?;
    let n = raw.len();
    let mut values = Vec::with_capacity(n);
    for (i, v) in raw.iter().enumerate() {
        values.push(read_value(v, n).map_err(|e| format!("value {i}: {e}"))?);
    }
    let ids = |v: Option<flatbuffers::Vector<i32>>, what: &str| -> Result<Vec<usize>, String> {
        v.map(|v| v.iter().map(|i| index(i as i64, n, what)).collect())
            .unwrap_or_else(|| Ok(Vec::new()))
    };
    let inputs = ids(plan.inputs(), "the plan's inputs")?;
    let outputs = ids(plan.outputs(), "the plan's outputs")?;
    let operators: Vec<String> = plan
        .operators()
        .map(|ops| {
            ops.iter()
                .map(|o| match o.overload().filter(|s| !s.is_empty()) {
                    Some(ov) => format!("{}.{ov}", o.name().unwrap_or("?")),
                    None => o.name().unwrap_or("?").to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    let delegates: Vec<String> = plan
        .delegates()
        .map(|d| {
            d.iter()
                .map(|d| d.id().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    let chains = plan.chains().ok_or("the plan has no chains")?;
    if chains.is_empty() {
        return Err("the plan has no chains".into());
    }
    let instrs = chains
        .get(0)
        .instructions()
        .ok_or("chain 0 has no instructions")?;
    let mut calls = Vec::new();
    for (k, ins) in instrs.iter().enumerate() {
        let what = format!("instruction {k}");
        let (op, args) = if let Some(kc) = ins.instr_args_as_kernel_call() {
            let op = usize::try_from(kc.op_index())
                .ok()
                .and_then(|i| operators.get(i))
                .ok_or_else(|| {
                    format!(
                        "{what} calls operator {}, which the plan does not list",
                        kc.op_index()
                    )
                })?;
            (op.clone(), ids(kc.args(), &what)?)
        } else if let Some(dc) = ins.instr_args_as_delegate_call() {
            let d = usize::try_from(dc.delegate_index())
                .ok()
                .and_then(|i| delegates.get(i))
                .ok_or_else(|| {
                    format!(
                        "{what} calls delegate {}, which the plan does not list",
                        dc.delegate_index()
                    )
                })?;
            (
                format!("{}{d}", super::lower::DELEGATE),
                ids(dc.args(), &what)?,
            )
        } else {
            continue;
        };
        calls.push(Call {
            instruction: k,
            op,
            args,
        });
    }
    let arena_bytes = plan
        .non_const_buffer_sizes()
        .map(|v| v.iter().map(|b| b.max(0) as u64).collect())
        .unwrap_or_default();
    Ok(Program {
        method,
        values,
        calls,
        inputs,
        outputs,
        arena_bytes,
        instructions: instrs.len(),
    })
}

fn read_value(v: fb::EValue, n: usize) -> Result<Value, String> {
    if let Some(t) = v.val_as_tensor() {
        return read_tensor(t).map(Value::Tensor);
    }
    let list = v
        .val_as_tensor_list()
        .and_then(|l| l.items())
        .or_else(|| v.val_as_optional_tensor_list().and_then(|l| l.items()));
    match list {
        // An optional list's -1 is "none".
        Some(items) => Ok(Value::List(
            items
                .iter()
                .filter(|&i| i >= 0)
                .map(|i| index(i as i64, n, "a tensor list"))
                .collect::<Result<_, _>>()?,
        )),
        None => Ok(Value::Other),
    }
}

fn read_tensor(t: fb::Tensor) -> Result<PteTensor, String> {
    let (dtype, bits) = dtype_of(t.scalar_type())
        .ok_or_else(|| format!("unsupported scalar type {:?}", t.scalar_type()))?;
    let mut shape = Vec::new();
    for d in t.sizes().iter().flat_map(|s| s.iter()) {
        shape.push(u64::try_from(d).map_err(|_| format!("negative dimension {d}"))?);
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or("its size overflows")?;
    let bytes = elements
        .checked_mul(bits)
        .ok_or("its size overflows")?
        .div_ceil(8);
    let slot = t.allocation_info().map(|a| Slot {
        arena: a.memory_id(),
        offset: (a.memory_offset_high() as u64) << 32 | a.memory_offset_low() as u64,
    });
    // Buffer 0 is the "no data" placeholder; external data is a constant
    // too (it lives in a named data file beside the program).
    let external = t
        .extra_tensor_info()
        .is_some_and(|x| x.location() == fb::TensorDataLocation::EXTERNAL);
    Ok(PteTensor {
        shape,
        dtype,
        bytes,
        constant: slot.is_none() && (t.data_buffer_idx() > 0 || external),
        slot,
    })
}

/// The dtype's name and bits per element.
fn dtype_of(s: ScalarType) -> Option<(&'static str, u64)> {
    Some(match s {
        ScalarType::BYTE => ("uint8", 8),
        ScalarType::CHAR => ("int8", 8),
        ScalarType::SHORT => ("int16", 16),
        ScalarType::INT => ("int32", 32),
        ScalarType::LONG => ("int64", 64),
        ScalarType::HALF => ("float16", 16),
        ScalarType::FLOAT => ("float32", 32),
        ScalarType::DOUBLE => ("float64", 64),
        ScalarType::BOOL => ("bool", 8),
        ScalarType::QINT8 => ("qint8", 8),
        ScalarType::QUINT8 => ("quint8", 8),
        ScalarType::QINT32 => ("qint32", 32),
        ScalarType::BFLOAT16 => ("bfloat16", 16),
        ScalarType::QUINT4X2 => ("quint4x2", 8),
        ScalarType::QUINT2X4 => ("quint2x4", 8),
        ScalarType::BITS16 => ("bits16", 16),
        ScalarType::FLOAT8E5M2 => ("float8_e5m2", 8),
        ScalarType::FLOAT8E4M3FN => ("float8_e4m3fn", 8),
        ScalarType::FLOAT8E5M2FNUZ => ("float8_e5m2fnuz", 8),
        ScalarType::FLOAT8E4M3FNUZ => ("float8_e4m3fnuz", 8),
        ScalarType::UINT16 => ("uint16", 16),
        ScalarType::UINT32 => ("uint32", 32),
        ScalarType::UINT64 => ("uint64", 64),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_a_program_is_one_line() {
        let e = Program::parse(b"\0\0\0\0TFL3xxxxxxxx").unwrap_err();
        assert!(e.contains("ET12"), "{e}");
        let mut junk = vec![0u8; 64];
        junk[4..8].copy_from_slice(IDENTIFIER);
        junk[0] = 200;
        let e = Program::parse(&junk).unwrap_err();
        assert!(e.starts_with("damaged flatbuffer"), "{e}");
        assert!(!e.contains('\n'));
    }
}
