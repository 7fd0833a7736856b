//! The detection mask and its connected components, as `scipy.ndimage.label` numbers them.
//!
//! The image is cut into bands of rows, labelled in parallel, each with union-find: a pixel
//! takes the provisional label of its neighbours already visited (left and above, and with 8
//! neighbours the two upper corners), joining their sets when they differ, or a new one. The
//! bands are then joined across their edges. Labels end as 1..n in raster order of each
//! component's first pixel, which is SciPy's numbering: that pixel has no visited neighbour in
//! its component, so it opens the component's smallest provisional label, and every set keeps
//! its smallest label as its root.

use rayon::prelude::*;

/// Rows per band: enough bands to keep every core busy at 2048², few enough that joining
/// them costs little. The labels do not depend on it.
const BAND_ROWS: usize = 64;

/// Which pixels touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Connectivity {
    /// Sharing an edge: SciPy's default structure in 2-D (`generate_binary_structure(2, 1)`).
    #[value(name = "4")]
    Four,
    /// Sharing an edge or a corner (`structure=np.ones((3, 3))`).
    #[value(name = "8")]
    Eight,
}

impl Connectivity {
    /// The neighbours a pixel has: 4 or 8.
    pub fn neighbours(self) -> u32 {
        match self {
            Connectivity::Four => 4,
            Connectivity::Eight => 8,
        }
    }

    /// Column offsets, in the row above, of the neighbours there.
    fn above(self) -> &'static [isize] {
        match self {
            Connectivity::Four => &[0],
            Connectivity::Eight => &[-1, 0, 1],
        }
    }
}

/// The detection mask: pixels strictly above `level`, as the lesson's `data > threshold`
/// (relative to zero, not to the background's median). NaN is above nothing.
pub fn detect(pixels: &[f32], level: f64) -> Vec<bool> {
    pixels.par_iter().map(|&v| f64::from(v) > level).collect()
}

/// Disjoint sets of labels, each rooted at its smallest label.
struct Sets {
    parent: Vec<u32>,
}

impl Sets {
    /// Labels 0..len, each alone (0 stands for the background and is never joined).
    fn new(len: usize) -> Self {
        Self { parent: (0..len as u32).collect() }
    }

    /// A new label, alone.
    fn add(&mut self) -> u32 {
        let label = self.parent.len() as u32;
        self.parent.push(label);
        label
    }

    fn find(&mut self, mut label: u32) -> u32 {
        // Path halving: each visited label points to its grandparent.
        while self.parent[label as usize] != label {
            let grandparent = self.parent[self.parent[label as usize] as usize];
            self.parent[label as usize] = grandparent;
            label = grandparent;
        }
        label
    }

    /// Joins the sets of `a` and `b`; returns the root, the smaller of their roots.
    fn join(&mut self, a: u32, b: u32) -> u32 {
        let (a, b) = (self.find(a), self.find(b));
        let (root, child) = (a.min(b), a.max(b));
        self.parent[child as usize] = root;
        root
    }

    /// For each label, its set's number: roots numbered 1, 2, … in increasing order (0 stays 0).
    fn numbers(&mut self) -> Vec<u32> {
        let mut numbers = vec![0u32; self.parent.len()];
        let mut next = 0;
        for label in 1..self.parent.len() as u32 {
            let root = self.find(label);
            // A root is the smallest label of its set, so it was numbered before its members.
            if root == label {
                next += 1;
                numbers[label as usize] = next;
            } else {
                numbers[label as usize] = numbers[root as usize];
            }
        }
        numbers
    }
}

/// Column `col + dc`, if a row of `width` has it.
fn shifted(col: usize, dc: isize, width: usize) -> Option<usize> {
    col.checked_add_signed(dc).filter(|&c| c < width)
}

/// Labels the rows of `mask` (`width` a row) on their own, as [`label`] numbers them, into
/// `labels`; returns how many components there are.
fn label_band(mask: &[bool], width: usize, connectivity: Connectivity, labels: &mut [u32]) -> u32 {
    let mut sets = Sets::new(1);
    for (i, &set) in mask.iter().enumerate() {
        if !set {
            labels[i] = 0;
            continue;
        }
        let (row, col) = (i / width, i % width);
        let left = (col > 0).then(|| i - 1);
        let above = connectivity
            .above()
            .iter()
            .filter(|_| row > 0)
            .filter_map(|&dc| shifted(col, dc, width))
            .map(|c| (row - 1) * width + c);
        let mut label = 0;
        for neighbour in left.into_iter().chain(above) {
            let other = labels[neighbour];
            if other != 0 {
                label = if label == 0 { sets.find(other) } else { sets.join(label, other) };
            }
        }
        labels[i] = if label == 0 { sets.add() } else { label };
    }
    let numbers = sets.numbers();
    labels.iter_mut().for_each(|l| *l = numbers[*l as usize]);
    numbers.iter().copied().max().unwrap_or(0)
}

/// `scipy.ndimage.label(mask)` (with 8 neighbours, `structure=np.ones((3, 3))`) of a mask of
/// `width` columns: each pixel's label, 0 for the background, and the number of labels.
/// `mask.len()` must fit in u32 (SciPy's labels are int32).
pub fn label(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
    label_in_bands(mask, width, connectivity, BAND_ROWS)
}

fn label_in_bands(mask: &[bool], width: usize, connectivity: Connectivity, band_rows: usize) -> (Vec<u32>, usize) {
    let mut labels = vec![0u32; mask.len()];
    if mask.is_empty() {
        return (labels, 0);
    }
    let band = band_rows * width;
    let counts: Vec<u32> = labels
        .par_chunks_mut(band)
        .zip(mask.par_chunks(band))
        .map(|(labels, mask)| label_band(mask, width, connectivity, labels))
        .collect();
    // Band b's labels become offsets[b] + 1 ..= offsets[b] + counts[b]: in raster order of
    // their first pixels across the whole image, as they were within each band.
    let offsets: Vec<u32> = counts
        .iter()
        .scan(0u32, |total, &count| {
            let offset = *total;
            *total += count;
            Some(offset)
        })
        .collect();
    let total: u32 = counts.iter().sum();
    let mut sets = Sets::new(total as usize + 1);
    for b in 1..counts.len() {
        let (top, bottom) = (b * band - width, b * band);
        for col in 0..width {
            let below = labels[bottom + col];
            if below == 0 {
                continue;
            }
            for &dc in connectivity.above() {
                let Some(c) = shifted(col, dc, width) else { continue };
                let above = labels[top + c];
                if above != 0 {
                    sets.join(offsets[b - 1] + above, offsets[b] + below);
                }
            }
        }
    }
    let numbers = sets.numbers();
    let count = numbers.iter().copied().max().unwrap_or(0) as usize;
    labels.par_chunks_mut(band).zip(&offsets).for_each(|(labels, &offset)| {
        labels.iter_mut().filter(|l| **l != 0).for_each(|l| *l = numbers[(offset + *l) as usize]);
    });
    (labels, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A mask from rows of `#` (set) and `.`.
    fn mask(rows: &[&str]) -> (Vec<bool>, usize) {
        (rows.concat().bytes().map(|b| b == b'#').collect(), rows[0].len())
    }

    /// Labels in the same layout, for readable failures.
    fn grid(labels: &[u32], width: usize) -> Vec<Vec<u32>> {
        labels.chunks(width).map(<[u32]>::to_vec).collect()
    }

    /// Labelling by flood fill, the definition written plainly: scan in raster order, and at
    /// each set pixel not yet labelled, give its whole component the next label.
    fn flood_fill(mask: &[bool], width: usize, connectivity: Connectivity) -> (Vec<u32>, usize) {
        let height = mask.len() / width;
        let mut labels = vec![0u32; mask.len()];
        let mut next = 0;
        for start in 0..mask.len() {
            if !mask[start] || labels[start] != 0 {
                continue;
            }
            next += 1;
            labels[start] = next;
            let mut stack = vec![start];
            while let Some(i) = stack.pop() {
                let (row, col) = ((i / width) as isize, (i % width) as isize);
                for (dr, dc) in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
                    let diagonal = dr != 0 && dc != 0;
                    let (r, c) = (row + dr, col + dc);
                    if (diagonal && connectivity == Connectivity::Four)
                        || !(0..height as isize).contains(&r)
                        || !(0..width as isize).contains(&c)
                    {
                        continue;
                    }
                    let j = r as usize * width + c as usize;
                    if mask[j] && labels[j] == 0 {
                        labels[j] = next;
                        stack.push(j);
                    }
                }
            }
        }
        (labels, next as usize)
    }

    #[test]
    fn the_threshold_is_strict_and_nan_is_never_detected() {
        let pixels = [0.5, 0.49, 0.51, f32::NAN, f32::INFINITY, -1.0];
        assert_eq!(detect(&pixels, 0.5), [false, false, true, false, true, false]);
    }

    #[test]
    fn a_diagonal_pair_is_one_source_with_8_neighbours_and_two_with_4() {
        let (m, width) = mask(&["#..", ".#.", "..."]);
        let (four, n4) = label(&m, width, Connectivity::Four);
        assert_eq!((grid(&four, width), n4), (vec![vec![1, 0, 0], vec![0, 2, 0], vec![0, 0, 0]], 2));
        let (eight, n8) = label(&m, width, Connectivity::Eight);
        assert_eq!((grid(&eight, width), n8), (vec![vec![1, 0, 0], vec![0, 1, 0], vec![0, 0, 0]], 1));
    }

    #[test]
    fn labels_follow_the_first_pixel_of_each_component_in_raster_order() {
        // Two Us whose arms start on row 0 and meet on row 2, a dot between them, and a pixel
        // that touches the second U only at a corner. Each U's right arm opens a provisional
        // label of its own and joins the left arm's on row 2.
        let (m, width) = mask(&[
            "#.#.#.#.#.", //
            "#.#...#.#.", //
            "###...###.", //
            ".........#",
        ]);
        let (four, n4) = label(&m, width, Connectivity::Four);
        let want = vec![
            vec![1, 0, 1, 0, 2, 0, 3, 0, 3, 0],
            vec![1, 0, 1, 0, 0, 0, 3, 0, 3, 0],
            vec![1, 1, 1, 0, 0, 0, 3, 3, 3, 0],
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 4],
        ];
        assert_eq!((grid(&four, width), n4), (want.clone(), 4));
        let (eight, n8) = label(&m, width, Connectivity::Eight);
        let mut want = want;
        want[3][9] = 3;
        assert_eq!((grid(&eight, width), n8), (want, 3), "the corner joins the pixel to the second U");
        // The first pixel decides, not the first label opened: the left arm of this ⅃ opens
        // a label after the dot's, and joins its right arm, which came before the dot.
        let (m, width) = mask(&["..#.#", "#.#..", "###.."]);
        let (labels, n) = label(&m, width, Connectivity::Four);
        assert_eq!((grid(&labels, width), n), (vec![vec![0, 0, 1, 0, 2], vec![1, 0, 1, 0, 0], vec![1, 1, 1, 0, 0]], 2));
    }

    #[test]
    fn bands_joined_at_their_edges_label_as_the_whole_image_does() {
        // Random masks of several densities, cut into bands of 1 to 5 rows and whole: each
        // gives the flood fill's labels.
        let mut rng = SmallRng::seed_from_u64(22);
        for (height, width, density) in [(1, 1, 1.0), (1, 17, 0.5), (23, 1, 0.5), (31, 29, 0.3), (40, 37, 0.55)] {
            let m: Vec<bool> = (0..height * width).map(|_| rng.random_bool(density)).collect();
            for connectivity in [Connectivity::Four, Connectivity::Eight] {
                let want = flood_fill(&m, width, connectivity);
                for band_rows in [1, 2, 3, 5, height] {
                    let got = label_in_bands(&m, width, connectivity, band_rows);
                    assert_eq!(got, want, "{}x{} {:?}, bands of {} rows", height, width, connectivity, band_rows);
                }
                assert_eq!(label(&m, width, connectivity), want);
            }
        }
        // A snake that crosses every band edge several times is one component.
        let rows: Vec<String> = (0..12)
            .map(|r| {
                if r % 2 == 0 {
                    "#####".into()
                } else if r % 4 == 1 {
                    "....#".into()
                } else {
                    "#....".into()
                }
            })
            .collect();
        let (m, width) = mask(&rows.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(label_in_bands(&m, width, Connectivity::Four, 1).1, 1);
        assert_eq!(label(&[], 4, Connectivity::Four), (vec![], 0));
    }
}
