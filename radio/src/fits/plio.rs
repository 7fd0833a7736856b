//! The PLIO_1 decoder of the tiled image compression convention: IRAF's pixel lists, a run
//! length code of 16-bit words for masks and other images of few levels, as CFITSIO's
//! `pl_l2pi` (and astropy, which compiles it) expands them. Each word holds an opcode (its top
//! 4 bits) and 12 bits of data: runs of zeros or of the current level, a level set, raised or
//! lowered, alone or with one pixel of it.

/// Appends the `count` pixels of the PLIO_1 line list `words` to `out`.
pub(super) fn decode(words: &[i16], count: usize, out: &mut Vec<i64>) -> Result<(), String> {
    let word = |i: usize| words.get(i).map(|&w| i32::from(w)).ok_or("its PLIO_1 data end before their header does");
    // The header: its third word is the list's length in the old format; else the new one
    // gives the header's length in the second word and the list's in the fourth and fifth.
    let (length, first) = match word(2)? {
        length if length > 0 => (length as usize, 3),
        _ => (((word(4)? << 15) + word(3)?).max(0) as usize, word(1)?.max(0) as usize),
    };
    let start = out.len();
    out.resize(start + count, 0);
    let pixels = &mut out[start..];
    // x: the next pixel the list describes (from 0); written: the pixels written so far.
    let (mut x, mut written, mut level) = (0usize, 0usize, 1i32);
    let mut at = first;
    while at < length && x < count {
        let w = word(at)?;
        let (opcode, data) = (w / 4096, (w & 4095) as usize);
        match opcode {
            // A run of zeros (0), of the level (4), or of zeros ending in the level (5).
            0 | 4 | 5 => {
                let end = (x + data).min(count);
                let run = &mut pixels[written..written + (end - x)];
                run.fill(if opcode == 4 { level } else { 0 }.into());
                if opcode == 5 && end == x + data && end > x {
                    if let Some(last) = run.last_mut() {
                        *last = level.into();
                    }
                }
                written += end - x;
                x += data;
            }
            // The level set from this word's data and the next word's.
            1 => {
                level = (word(at + 1)? << 12) + data as i32;
                at += 1;
            }
            2 => level = level.wrapping_add(data as i32),
            3 => level = level.wrapping_sub(data as i32),
            // The level raised (6) or lowered (7), then one pixel of it.
            6 | 7 => {
                level = if opcode == 6 { level.wrapping_add(data as i32) } else { level.wrapping_sub(data as i32) };
                if let Some(pixel) = pixels.get_mut(written) {
                    *pixel = level.into();
                }
                written += 1;
                x += 1;
            }
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_opcode_expands() {
        // The old header (its third word the list's length, 9), then: the level set to 3, a run
        // of it, a zero, the level raised by 2 with a pixel of it, a run of zeros ending in the
        // level (opcode 5), and the level lowered by 4 with a pixel of it.
        let words = [0, 0, 10, 0x1003, 0, 0x4002, 0x0001, 0x6002, 0x5003, 0x7004];
        let mut out = Vec::new();
        decode(&words, 10, &mut out).unwrap();
        assert_eq!(out, vec![3, 3, 0, 5, 0, 0, 5, 1, 0, 0], "the rest of the tile is zeros");
        // A tile shorter than the list clips its runs: no level at the end of a clipped opcode 5.
        out.clear();
        decode(&words, 5, &mut out).unwrap();
        assert_eq!(out, vec![3, 3, 0, 5, 0]);
    }

    #[test]
    fn short_lists_are_errors() {
        let mut out = Vec::new();
        assert!(decode(&[0, 0], 4, &mut out).unwrap_err().contains("end before their header does"));
        assert!(decode(&[0, 0, 9, 0x1003], 4, &mut out).unwrap_err().contains("end before"));
    }
}
