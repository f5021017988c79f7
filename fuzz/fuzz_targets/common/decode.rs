//! The checks every descriptor decoder target makes, generic over the native entry.

use simak_core::ev74::{NativeEntry, decode};

/// Decodes `data` as a descriptor of entry `E` and checks the decoder's contract: `decode`
/// and `parse` agree; an accepted descriptor emits back to the same bytes and decodes to
/// the same representation; a rejection has a nonzero code and formats; the field listing
/// of any descriptor-sized input formats. Returns the accepted representation, for the
/// entry's own checks.
pub fn check<E: NativeEntry>(data: &[u8]) -> Option<E::Repr> {
    let parsed = E::parse(data);
    let accepted = match decode::<E>(data) {
        Ok(repr) => {
            assert_eq!(parsed, Ok(repr));
            let bytes = E::to_bytes(&repr);
            assert_eq!(bytes.as_ref(), data, "emit is not the inverse of parse");
            assert_eq!(decode::<E>(bytes.as_ref()), Ok(repr));
            Some(repr)
        }
        Err(e) => {
            assert_ne!(e.code(), 0);
            let _ = format!("{e}");
            None
        }
    };
    if let Some(fields) = E::fields(data) {
        for field in fields.iter() {
            let _ = format!("{field}");
        }
    }
    accepted
}
