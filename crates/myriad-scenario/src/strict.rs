//! A `serde_json::Value` deserializer that requires a mapping wherever a struct is expected.
//!
//! serde's derived struct deserializers accept a sequence too (`visit_seq`) and fill the
//! fields by position, so `cluster: [h100-sxm, 1024]` would parse as a cluster. User files
//! name every field: `StrictValue` rejects a list in `deserialize_struct` (and in struct
//! enum variants) and otherwise behaves as `serde_json::Value`'s own deserializer, wrapping
//! every nested value so that the rule holds at any depth. It sits under
//! `serde_path_to_error`, so errors keep their field paths and unknown-key hints.
//!
//! A struct's key given as null is dropped before the struct sees it: null means "not
//! given" for every key, so an optional key is absent and a key with a default takes its
//! default (`oversubscription: null` is 1); a required key given as null is missing.

use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, Error as _, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, VariantAccess, Visitor,
};
use serde_json::{Error, Value};

/// The message for a list where a mapping is expected.
pub const LIST_FOR_MAPPING: &str = "expected a mapping (key: value), found a list";

/// Said after `missing field `key`` when the key was given as null.
pub const NULL_REQUIRED: &str = "given as null";

pub struct StrictValue(pub Value);

/// An integer field takes a number with no fractional part however it is written: JSON
/// Schema calls `1024.0` an integer (the checked-in schema says `integer`), JSON writers
/// emit it for whole floats (Python's `json.dumps(1024.0)`), and YAML reads `1e3` as a
/// float. The integer's own visitor then checks its range.
macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if let Value::Number(n) = &self.0 {
                if let (None, None, Some(f)) = (n.as_u64(), n.as_i64(), n.as_f64()) {
                    // 2^64 and -2^63 are exact in f64; the casts below are exact inside.
                    if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                        return visitor.visit_u64(f as u64);
                    }
                    if f.fract() == 0.0 && (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                        return visitor.visit_i64(f as i64);
                    }
                }
            }
            self.deserialize_any(visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for StrictValue {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(a) => {
                let len = a.len();
                let mut seq = Seq(a.into_iter());
                let out = visitor.visit_seq(&mut seq)?;
                if seq.0.len() == 0 {
                    Ok(out)
                } else {
                    Err(Error::invalid_length(len, &"fewer elements in the list"))
                }
            }
            Value::Object(m) => {
                let len = m.len();
                let mut map = Map {
                    iter: m.into_iter(),
                    value: None,
                };
                let out = visitor.visit_map(&mut map)?;
                if map.iter.len() == 0 {
                    Ok(out)
                } else {
                    Err(Error::invalid_length(len, &"fewer elements in the map"))
                }
            }
            // Scalars have no nested values: the plain deserializer is the same.
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(_) => Err(Error::custom(LIST_FOR_MAPPING)),
            // A key given as null is a key not given: an optional key is absent, a key with a
            // default takes it, and a required key is missing (said so, naming the null).
            Value::Object(mut m) => {
                let nulls: Vec<String> = m
                    .iter()
                    .filter(|(_, v)| v.is_null())
                    .map(|(k, _)| k.clone())
                    .collect();
                m.retain(|_, v| !v.is_null());
                StrictValue(Value::Object(m))
                    .deserialize_any(visitor)
                    .map_err(|e| {
                        let msg = e.to_string();
                        match msg
                            .strip_prefix("missing field `")
                            .and_then(|r| r.split('`').next())
                        {
                            Some(k) if nulls.iter().any(|n| n == k) => {
                                Error::custom(format!("missing field `{k}` {NULL_REQUIRED}"))
                            }
                            _ => e,
                        }
                    })
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(m) => {
                let mut it = m.into_iter();
                match (it.next(), it.next()) {
                    (Some((variant, value)), None) => visitor.visit_enum(Enum {
                        variant,
                        value: Some(value),
                    }),
                    (None, _) => Err(Error::invalid_value(
                        Unexpected::Map,
                        &one_of(variants).as_str(),
                    )),
                    _ => Err(Error::invalid_value(
                        Unexpected::Map,
                        &format!(
                            "{} (a mapping holds one of them as its only key)",
                            one_of(variants)
                        )
                        .as_str(),
                    )),
                }
            }
            Value::String(variant) => visitor.visit_enum(Enum {
                variant,
                value: None,
            }),
            // serde_json's own message ("expected string or map") names no choice.
            other if !variants.is_empty() => Err(Error::invalid_type(
                unexpected(&other),
                &one_of(variants).as_str(),
            )),
            other => other.deserialize_enum(name, variants, visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    integers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
    }

    serde::forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

impl<'de> IntoDeserializer<'de, Error> for StrictValue {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

struct Seq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Seq {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(StrictValue(v)))
            .transpose()
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Map {
    iter: <serde_json::Map<String, Value> as IntoIterator>::IntoIter,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for Map {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((k, v)) => {
                self.value = Some(v);
                // Keys are strings in both YAML-through-JSON and JSON; no key type in the
                // formats is a number.
                seed.deserialize(Value::String(k)).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(StrictValue(v)),
            None => Err(Error::custom("value is missing")),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// `one of `a`, `b`, `c``, as serde words an unknown variant.
fn one_of(variants: &[&str]) -> String {
    let names: Vec<String> = variants.iter().map(|v| format!("`{v}`")).collect();
    format!("one of {}", names.join(", "))
}

struct Enum {
    variant: String,
    value: Option<Value>,
}

impl<'de> EnumAccess<'de> for Enum {
    type Error = Error;
    type Variant = Variant;
    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Variant), Error> {
        let v = seed.deserialize(Value::String(self.variant.clone()))?;
        Ok((v, Variant(self.value, self.variant)))
    }
}

/// A variant's value, and its name (for messages).
struct Variant(Option<Value>, String);

impl<'de> VariantAccess<'de> for Variant {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        // Every enum of the formats is a name (the schema says a string): `{fat-tree: null}`
        // is a mapping whose one key is not given, refused as `{fat-tree: 1}` is, not read
        // as `fat-tree` (which only YAML's tagged-enum habit would suggest).
        match self.0 {
            None => Ok(()),
            // serde's own message is "expected unit".
            Some(Value::Null) => Err(Error::invalid_type(
                Unexpected::Other("null"),
                &format!("`{}` alone, with no value", self.1).as_str(),
            )),
            Some(v) => Err(Error::invalid_type(
                unexpected(&v),
                &format!("`{}` alone, with no value", self.1).as_str(),
            )),
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.0 {
            Some(v) => seed.deserialize(StrictValue(v)),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        }
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Some(v @ Value::Array(_)) => StrictValue(v).deserialize_any(visitor),
            Some(other) => Err(Error::invalid_type(unexpected(&other), &"tuple variant")),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Some(v @ Value::Object(_)) => StrictValue(v).deserialize_struct("", fields, visitor),
            Some(Value::Array(_)) => Err(Error::custom(LIST_FOR_MAPPING)),
            Some(other) => Err(Error::invalid_type(unexpected(&other), &"struct variant")),
            None => Err(Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

fn unexpected(v: &Value) -> Unexpected<'_> {
    match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Unexpected::Unsigned(u),
            (_, Some(i), _) => Unexpected::Signed(i),
            (_, _, Some(f)) => Unexpected::Float(f),
            _ => Unexpected::Other("number"),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}
