//! Graph JSON parsed as a stream: each tensor and op goes to the
//! [`GraphBuilder`] as soon as it is read, through a buffered reader, so a
//! large graph never has its text and a parsed document in memory beside
//! the graph (the whole-document path peaked at 8.5x a 10^6-op file).
//! The checks are [`super::graph_from_json`]'s own: the same
//! [`super::tensor_spec`] and [`super::op_spec`] and the same builder.

use super::{op_spec, tensor_spec, OpJson, TensorJson};
use crate::graph::{Graph, GraphBuilder};
use crate::{Error, Result};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::path::Path;

const FIELDS: &[&str] = &["name", "tensors", "ops", "outputs"];

/// Parses the graph JSON at `path` into a graph; `origin` names it when the
/// file does not.
pub(super) fn load(path: &Path, origin: &str) -> Result<Graph> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    crate::input::skip_bom(&mut r).map_err(|e| Error::io(path, e))?;
    let mut de = serde_json::Deserializer::from_reader(r);
    let mut sink = Sink {
        builder: GraphBuilder::new(origin),
        failed: None,
    };
    let parsed = (&mut sink).deserialize(&mut de).and_then(|()| de.end());
    // A tensor or op the builder refused stopped the parse: its own typed
    // error (naming the tensor or op) is the one to show.
    if let Some(e) = sink.failed {
        return Err(e);
    }
    parsed.map_err(|e| Error::json(path, "graph JSON", &e))?;
    sink.builder.build()
}

/// Where the parsed specs go, and the first spec that failed its checks.
struct Sink {
    builder: GraphBuilder,
    failed: Option<Error>,
}

impl Sink {
    /// Keeps `spec`'s error (and stops the parse) or hands the spec on.
    fn take<T, E: de::Error>(
        &mut self,
        spec: Result<T>,
        add: impl FnOnce(&mut GraphBuilder, T),
    ) -> std::result::Result<(), E> {
        match spec {
            Ok(s) => {
                add(&mut self.builder, s);
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                self.failed = Some(e);
                Err(E::custom(msg))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Sink {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut Sink {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a graph JSON object with `tensors` and `ops`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let (mut tensors, mut ops, mut name, mut outputs) = (false, false, false, false);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let seen = match key.as_ref() {
                "name" => &mut name,
                "tensors" => &mut tensors,
                "ops" => &mut ops,
                "outputs" => &mut outputs,
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            };
            if std::mem::replace(seen, true) {
                return Err(de::Error::duplicate_field(field(&key)));
            }
            match key.as_ref() {
                "name" => {
                    if let Some(n) = map.next_value::<Option<String>>()? {
                        self.builder.set_name(n);
                    }
                }
                "tensors" => map.next_value_seed(Each::<TensorJson>::new(self))?,
                "ops" => map.next_value_seed(Each::<OpJson>::new(self))?,
                _ => {
                    for o in map.next_value::<Vec<String>>()? {
                        self.builder.output(o);
                    }
                }
            }
        }
        for (seen, what) in [(tensors, "tensors"), (ops, "ops")] {
            if !seen {
                return Err(de::Error::missing_field(what));
            }
        }
        Ok(())
    }
}

/// The static name of a known field (serde's error wants one).
fn field(key: &str) -> &'static str {
    FIELDS.iter().copied().find(|f| *f == key).unwrap_or("?")
}

/// The `tensors` or `ops` array, handed to the builder element by element.
struct Each<'a, T> {
    sink: &'a mut Sink,
    kind: std::marker::PhantomData<T>,
}

impl<'a, T> Each<'a, T> {
    fn new(sink: &'a mut Sink) -> Self {
        Each {
            sink,
            kind: std::marker::PhantomData,
        }
    }
}

/// What one array element becomes in the builder.
trait Spec: Sized + for<'de> serde::Deserialize<'de> {
    fn add<E: de::Error>(self, sink: &mut Sink) -> std::result::Result<(), E>;
}

impl Spec for TensorJson {
    fn add<E: de::Error>(self, sink: &mut Sink) -> std::result::Result<(), E> {
        sink.take(tensor_spec(self), |b, s| {
            b.tensor(s);
        })
    }
}

impl Spec for OpJson {
    fn add<E: de::Error>(self, sink: &mut Sink) -> std::result::Result<(), E> {
        sink.take(op_spec(self), |b, s| {
            b.op(s);
        })
    }
}

impl<'de, T: Spec> DeserializeSeed<'de> for Each<'_, T> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: Spec> Visitor<'de> for Each<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            item.add(self.sink)?;
        }
        Ok(())
    }
}
