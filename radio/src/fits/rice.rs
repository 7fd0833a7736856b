//! The RICE_1 decoder of the tiled image compression convention (Pence, Seaman and White 2009;
//! White and Greenfield 1999), bit for bit as CFITSIO's `fits_rdecomp` (and astropy, which
//! compiles it) decodes: the first pixel stored whole, then blocks of differences, each block
//! led by its code: 0 for a block of repeats, all ones for differences stored whole, else `fs`
//! + 1 for Rice codes with `fs` low bits. No crate decodes it exactly (see [`super::compressed`]).

/// Reads bits, most significant first, from a byte slice.
struct Bits<'a> {
    bytes: &'a [u8],
    next: usize,
    /// The bits not yet read, from the top: the low `64 - count` bits are zero.
    buffer: u64,
    count: u32,
}

impl<'a> Bits<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Bits { bytes, next: 0, buffer: 0, count: 0 }
    }

    /// Tops the buffer up to more than 56 bits, or to the end of the bytes.
    fn refill(&mut self) {
        if self.count > 56 {
            return;
        }
        if let Some(word) = self.bytes.get(self.next..self.next + 8) {
            // Eight bytes at once: as many whole ones as fit, the rest of the word cleared.
            let take = (63 - self.count) / 8;
            let word = u64::from_be_bytes(word.try_into().unwrap_or_default()) >> self.count;
            let count = self.count + 8 * take;
            self.buffer |= word & !(u64::MAX >> count);
            self.count = count;
            self.next += take as usize;
            return;
        }
        while self.count <= 56 {
            let Some(&byte) = self.bytes.get(self.next) else { return };
            self.buffer |= u64::from(byte) << (56 - self.count);
            self.count += 8;
            self.next += 1;
        }
    }

    /// The next `n` bits (at most 32), or `None` past the end.
    fn take(&mut self, n: u32) -> Option<u32> {
        if n == 0 {
            return Some(0);
        }
        self.refill();
        if self.count < n {
            return None;
        }
        let value = (self.buffer >> (64 - n)) as u32;
        self.buffer <<= n;
        self.count -= n;
        Some(value)
    }

    /// The number of zero bits before the next one bit, which is read too; `None` past the end.
    fn zeros(&mut self) -> Option<u64> {
        let mut zeros = 0u64;
        loop {
            self.refill();
            if self.count == 0 {
                return None;
            }
            let leading = self.buffer.leading_zeros();
            if leading < self.count {
                self.buffer <<= leading + 1;
                self.count -= leading + 1;
                return Some(zeros + u64::from(leading));
            }
            zeros += u64::from(self.count);
            (self.buffer, self.count) = (0, 0);
        }
    }
}

/// Undoes the mapping of signed differences to unsigned codes (0, -1, 1, -2, … as 0, 1, 2, 3, …).
fn unmap(code: u32) -> u32 {
    if code & 1 == 0 {
        code >> 1
    } else {
        !(code >> 1)
    }
}

/// Appends the `count` pixels of a RICE_1 stream of `bytepix`-byte integers (1, 2 or 4) in blocks
/// of `block` to `out`: signed for 2 and 4 bytes, unsigned for 1 (what each BITPIX makes of them).
pub(super) fn decode(
    bytes: &[u8],
    count: usize,
    block: usize,
    bytepix: usize,
    out: &mut Vec<i64>,
) -> Result<(), String> {
    // Bits of each block's code and its largest value for Rice codes (the next one marks
    // differences stored whole); a pixel as its BITPIX reads it.
    match bytepix {
        1 => decode_as::<1>(bytes, count, block, (3, 6), |v| i64::from(v as u8), out),
        2 => decode_as::<2>(bytes, count, block, (4, 14), |v| i64::from(v as u16 as i16), out),
        4 => decode_as::<4>(bytes, count, block, (5, 25), |v| i64::from(v as i32), out),
        _ => Err(format!("BYTEPIX = {} is not read by RICE_1: 1, 2 or 4", bytepix)),
    }
}

fn decode_as<const BYTES: usize>(
    bytes: &[u8],
    count: usize,
    block: usize,
    (code_bits, fs_max): (u32, i32),
    pixel: impl Fn(u32) -> i64,
    out: &mut Vec<i64>,
) -> Result<(), String> {
    let bits = 8 * BYTES as u32;
    let mask = u32::MAX >> (32 - bits);
    let short = || format!("its RICE_1 data end before its {} pixels do", count);
    let first = bytes.get(..BYTES).ok_or_else(short)?;
    let mut last = first.iter().fold(0u32, |value, &byte| value << 8 | u32::from(byte));
    let mut stream = Bits::new(&bytes[BYTES..]);
    out.reserve(count);
    let mut done = 0;
    while done < count {
        let end = count.min(done.saturating_add(block));
        let fs = stream.take(code_bits).ok_or_else(short)? as i32 - 1;
        if fs < 0 {
            out.extend(std::iter::repeat_n(pixel(last), end - done));
        } else {
            for _ in done..end {
                let code = if fs == fs_max {
                    stream.take(bits).ok_or_else(short)?
                } else {
                    // A run of zeros for the high bits, then fs low bits; the shift wraps in 32
                    // bits as CFITSIO's does.
                    let high = stream.zeros().ok_or_else(short)?;
                    let low = stream.take(fs as u32).ok_or_else(short)?;
                    (high.wrapping_shl(fs as u32) as u32) | low
                };
                last = unmap(code).wrapping_add(last) & mask;
                out.push(pixel(last));
            }
        }
        done = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits most significant first, for streams made by hand.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        used: u32,
    }

    impl Writer {
        fn put(&mut self, value: u64, n: u32) {
            for i in (0..n).rev() {
                if self.used.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                let bit = (value >> i & 1) as u8;
                *self.bytes.last_mut().unwrap() |= bit << (7 - self.used % 8);
                self.used += 1;
            }
        }
    }

    fn decoded(bytes: &[u8], count: usize, block: usize, bytepix: usize) -> Result<Vec<i64>, String> {
        let mut out = Vec::new();
        decode(bytes, count, block, bytepix, &mut out).map(|()| out)
    }

    /// Code `code` of a Rice block with `fs` low bits: its high bits as a run of zeros, a one, then the low bits.
    fn rice(w: &mut Writer, code: u64, fs: u32) {
        w.put(0, (code >> fs) as u32);
        w.put(1, 1);
        w.put(code & ((1 << fs) - 1), fs);
    }

    #[test]
    fn each_kind_of_block_decodes() {
        // 32-bit pixels in blocks of 3, the first 100: a block of repeats (code 0); a Rice block
        // with fs = 1 (code 2) of differences +1, -2 and 0 (mapped to 2, 3 and 0); a block stored
        // whole (code 26) of one difference, -5 (mapped to 9).
        let mut w = Writer { bytes: vec![0, 0, 0, 100], used: 32 };
        w.put(0, 5);
        w.put(2, 5);
        for code in [2, 3, 0] {
            rice(&mut w, code, 1);
        }
        w.put(26, 5);
        w.put(9, 32);
        assert_eq!(decoded(&w.bytes, 7, 3, 4).unwrap(), vec![100, 100, 100, 101, 99, 99, 94]);
        // 16-bit, fs = 0 (code 1): +1 is two zeros and a one.
        let mut w = Writer { bytes: vec![0, 7], used: 16 };
        w.put(1, 4);
        rice(&mut w, 2, 0);
        assert_eq!(decoded(&w.bytes, 1, 32, 2).unwrap(), vec![8]);
        // A large fs: code 5·2^20 + 3, odd, is the difference -(5·2^19 + 2).
        let mut w = Writer { bytes: vec![0, 0, 0, 0], used: 32 };
        w.put(21, 5);
        rice(&mut w, (5 << 20) + 3, 20);
        assert_eq!(decoded(&w.bytes, 1, 32, 4).unwrap(), vec![-((5 << 19) + 2)]);
    }

    #[test]
    fn widths_wrap_and_sign_as_their_bitpix() {
        // 16-bit: 32767 + 1 wraps to -32768; 8-bit: 255 + 1 wraps to 0, and bytes are unsigned.
        let mut w = Writer { bytes: vec![0x7F, 0xFF], used: 16 };
        w.put(1, 4);
        rice(&mut w, 2, 0);
        assert_eq!(decoded(&w.bytes, 1, 16, 2).unwrap(), vec![-32768]);
        let mut w = Writer { bytes: vec![0xFF], used: 8 };
        w.put(1, 3);
        rice(&mut w, 2, 0);
        rice(&mut w, 0, 0);
        assert_eq!(decoded(&w.bytes, 2, 8, 1).unwrap(), vec![0, 0]);
    }

    #[test]
    fn short_or_odd_streams_are_errors() {
        assert!(decoded(&[], 1, 32, 4).unwrap_err().contains("end before its 1 pixels do"));
        assert!(decoded(&[0, 0, 0, 1], 1, 32, 4).unwrap_err().contains("end before"));
        // A run of zeros to the end never finds its one bit.
        assert!(decoded(&[0, 0, 0, 1, 0b0000_1000, 0, 0], 2, 32, 4).unwrap_err().contains("end before"));
        assert!(decoded(&[0; 8], 1, 32, 8).unwrap_err().contains("BYTEPIX = 8"));
        // Repeats need no bits past the block code: 40 pixels from a seed and two codes.
        assert_eq!(decoded(&[0, 0, 0, 9, 0, 0], 40, 32, 4).unwrap(), vec![9; 40]);
    }
}
