//! Bounds-checked little-endian codec. Every decode returns a `Result`; nothing is
//! ever cast from bytes to a struct, so the wire format is independent of the
//! CUDA version and ABI on either side.

use thiserror::Error;

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The input ended before the value did.
    #[error("truncated: needed {needed} more bytes")]
    Truncated {
        /// How many bytes were missing.
        needed: usize,
    },
    /// Bytes were left over after the last field.
    #[error("{0} trailing bytes after message")]
    Trailing(usize),
    /// A length field exceeds what the protocol allows.
    #[error("{what} length {len} exceeds the limit of {limit}")]
    TooLong {
        /// Which field.
        what: &'static str,
        /// The length that was announced.
        len: u64,
        /// The largest length accepted.
        limit: u64,
    },
    /// A field holds a value that is not allowed.
    #[error("invalid {0}")]
    Invalid(&'static str),
}

/// Reads values from a borrowed byte slice, never past its end.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Takes the next `len` bytes.
    pub fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        if len > self.buf.len() {
            return Err(DecodeError::Truncated {
                needed: len - self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(len);
        self.buf = tail;
        Ok(head)
    }

    /// A reader over the next `len` bytes, which are consumed from this one.
    pub fn sub(&mut self, len: usize) -> Result<Reader<'a>, DecodeError> {
        self.take(len).map(Reader::new)
    }

    /// Fails unless every byte has been read.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.buf.len() {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }
}

/// Appends values to a byte vector.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// Appends to `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Self { buf }
    }

    /// Appends raw bytes.
    pub fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
}

/// A value with a fixed wire representation.
pub trait Wire: Sized {
    /// Appends the value.
    fn encode(&self, w: &mut Writer<'_>);
    /// Reads the value.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

macro_rules! wire_int {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            fn encode(&self, w: &mut Writer<'_>) {
                w.put(&self.to_le_bytes());
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                r.array().map(<$t>::from_le_bytes)
            }
        }
    )*};
}
// Floats travel as their IEEE 754 bits (the scalars of math-library calls).
wire_int!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

impl Wire for bool {
    fn encode(&self, w: &mut Writer<'_>) {
        u8::from(*self).encode(w)
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        match u8::decode(r)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::Invalid("bool")),
        }
    }
}

impl<T: Wire + Copy + Default, const N: usize> Wire for [T; N] {
    fn encode(&self, w: &mut Writer<'_>) {
        for v in self {
            v.encode(w);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut out = [T::default(); N];
        for v in &mut out {
            *v = T::decode(r)?;
        }
        Ok(out)
    }
}

/// An opaque byte string of at most [`MAX_BLOB`] bytes (kernel parameters,
/// device `printf` output).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blob(pub Vec<u8>);

/// Longest [`Blob`] accepted.
pub const MAX_BLOB: usize = 1 << 20;

impl Wire for Blob {
    fn encode(&self, w: &mut Writer<'_>) {
        let bytes = &self.0[..self.0.len().min(MAX_BLOB)];
        (bytes.len() as u32).encode(w);
        w.put(bytes);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = u32::decode(r)? as usize;
        if len > MAX_BLOB {
            return Err(DecodeError::TooLong {
                what: "blob",
                len: len as u64,
                limit: MAX_BLOB as u64,
            });
        }
        Ok(Blob(r.take(len)?.to_vec()))
    }
}

/// Longest string accepted on the wire (device names, messages).
pub const MAX_STRING: usize = 4096;
/// Most elements accepted in one encoded list.
pub const MAX_LIST: usize = 65_536;

impl Wire for String {
    fn encode(&self, w: &mut Writer<'_>) {
        let bytes = &self.as_bytes()[..self.len().min(MAX_STRING)];
        (bytes.len() as u32).encode(w);
        w.put(bytes);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = u32::decode(r)? as usize;
        if len > MAX_STRING {
            return Err(DecodeError::TooLong {
                what: "string",
                len: len as u64,
                limit: MAX_STRING as u64,
            });
        }
        let bytes = r.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Invalid("utf-8 string"))
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn encode(&self, w: &mut Writer<'_>) {
        (self.len() as u32).encode(w);
        for v in self {
            v.encode(w);
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = u32::decode(r)? as usize;
        if len > MAX_LIST {
            return Err(DecodeError::TooLong {
                what: "list",
                len: len as u64,
                limit: MAX_LIST as u64,
            });
        }
        // Never trust the announced length for the allocation: each element
        // takes at least one byte, so the remaining input bounds it.
        let mut out = Vec::with_capacity(len.min(r.remaining()));
        for _ in 0..len {
            out.push(T::decode(r)?);
        }
        Ok(out)
    }
}

impl<T: Wire> Wire for Option<T> {
    fn encode(&self, w: &mut Writer<'_>) {
        match self {
            None => false.encode(w),
            Some(v) => {
                true.encode(w);
                v.encode(w);
            }
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(if bool::decode(r)? {
            Some(T::decode(r)?)
        } else {
            None
        })
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    fn encode(&self, w: &mut Writer<'_>) {
        self.0.encode(w);
        self.1.encode(w);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok((A::decode(r)?, B::decode(r)?))
    }
}

/// Declares a struct whose wire form is its fields in order.
#[macro_export]
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field : $ty ),*
        }
        impl $crate::codec::Wire for $name {
            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::codec::Writer<'_>) {
                $( $crate::codec::Wire::encode(&self.$field, w); )*
            }
            #[allow(unused_variables)]
            fn decode(r: &mut $crate::codec::Reader<'_>) -> Result<Self, $crate::codec::DecodeError> {
                Ok(Self { $( $field: $crate::codec::Wire::decode(r)? ),* })
            }
        }
    };
}

/// Declares an enum of struct-like variants whose wire form is the
/// variant's explicit `u16` tag, then its fields in order (the calls of a
/// math library, [`crate::math`]). Tags are never reused.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $tag:literal $variant:ident { $( $field:ident : $ty:ty ),* $(,)? }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant { $( #[allow(missing_docs)] $field : $ty ),* } ),*
        }
        impl $crate::codec::Wire for $name {
            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::codec::Writer<'_>) {
                match self {
                    $( $name::$variant { $( $field ),* } => {
                        $crate::codec::Wire::encode(&($tag as u16), w);
                        $( $crate::codec::Wire::encode($field, w); )*
                    } )*
                }
            }
            #[allow(unused_variables)]
            fn decode(r: &mut $crate::codec::Reader<'_>) -> Result<Self, $crate::codec::DecodeError> {
                let tag = <u16 as $crate::codec::Wire>::decode(r)?;
                match tag {
                    $( $tag => Ok($name::$variant { $( $field: $crate::codec::Wire::decode(r)? ),* }), )*
                    _ => Err($crate::codec::DecodeError::Invalid(concat!(stringify!($name), " tag"))),
                }
            }
        }
    };
}

/// Encodes `value` into a fresh vector.
pub fn to_vec<T: Wire>(value: &T) -> Vec<u8> {
    let mut buf = Vec::new();
    value.encode(&mut Writer::new(&mut buf));
    buf
}

/// Decodes exactly one `T` from `bytes`, rejecting trailing bytes.
pub fn from_slice<T: Wire>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(bytes);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_round_trip_little_endian() {
        let bytes = to_vec(&0x0102_0304u32);
        assert_eq!(bytes, [4, 3, 2, 1]);
        assert_eq!(from_slice::<u32>(&bytes), Ok(0x0102_0304));
    }

    #[test]
    fn truncated_and_trailing_are_rejected() {
        assert_eq!(
            from_slice::<u64>(&[1, 2, 3]),
            Err(DecodeError::Truncated { needed: 5 })
        );
        assert_eq!(from_slice::<u16>(&[1, 2, 3]), Err(DecodeError::Trailing(1)));
    }

    #[test]
    fn hostile_lengths_do_not_allocate() {
        let mut bytes = to_vec(&u32::MAX);
        bytes.extend_from_slice(&[0; 4]);
        assert!(matches!(
            from_slice::<Vec<u64>>(&bytes),
            Err(DecodeError::TooLong { .. })
        ));
        let bytes = to_vec(&1000u32);
        assert!(matches!(
            from_slice::<Vec<u64>>(&bytes),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            from_slice::<String>(&to_vec(&(MAX_STRING as u32 + 1))),
            Err(DecodeError::TooLong { .. })
        ));
    }

    #[test]
    fn strings_and_bools() {
        let s = "emulated".to_string();
        assert_eq!(from_slice::<String>(&to_vec(&s)), Ok(s));
        assert_eq!(from_slice::<bool>(&[2]), Err(DecodeError::Invalid("bool")));
    }
}
