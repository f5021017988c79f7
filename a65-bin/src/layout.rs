//! `simak layout`: print the `MlaTiled` tile grid of a shape (SPEC §5) and optionally draw
//! where each logical element lands in the physical buffer as an SVG.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;
use simak::MAX_RANK;
use simak::layout::{TileAlign, TileAxis, TiledView};

use crate::error::{CliError, bad_file};
use crate::output::{Format, Target};
use crate::params::{LayoutFlags, U64List, layout_rule, parse_tess_shape, parse_tile_align};
use crate::report::{self, Context, Done, shape_text};

/// Largest physical buffer (bytes) `--svg` draws: 1024 rows of 16 bytes.
pub const SVG_MAX_BYTES: u64 = 16384;

/// Print the MlaTiled tile grid of a shape (and optionally draw it as SVG).
#[derive(Debug, Args)]
#[command(
    long_about = "Print the MlaTiled tile grid of a shape (SPEC §5, and the MLA's \
    output layouts of §12.1: --channels compact, pad16 or cblock16, --tile-align 16 or 1, \
    --dtype bf16, i8, i16 or i32): the role of each axis, tile counts, the tile classes (full and boundary tiles) with their extents and \
    byte sizes, bytes per outer index, capacity, and the first tiles in storage order \
    with their byte offsets. --svg FILE draws the physical buffer as rows of 16 bytes, \
    each byte labelled with the logical element (and byte plane) stored there, padding \
    in grey and tiles outlined (buffers up to 16384 bytes)."
)]
pub struct LayoutArgs {
    /// Logical shape, e.g. 300,451,3 (rank 1 to 6).
    #[arg(long, value_name = "SHAPE", value_parser = parse_tess_shape)]
    shape: U64List,
    #[command(flatten)]
    layout: LayoutFlags,
    /// Element storage.
    #[arg(long, value_enum, default_value_t = TiledDType::Bf16)]
    dtype: TiledDType,
    /// Tile alignment in bytes: 16 (SPEC §5, the input side) or 1 (MLA outputs in Compact
    /// encoding, SPEC §12.1).
    #[arg(long, value_name = "16|1", value_parser = parse_tile_align, default_value = "16")]
    tile_align: TileAlign,
    /// How many tiles to list in storage order.
    #[arg(long, value_name = "N", default_value_t = 8)]
    tiles: usize,
    /// Draw the physical buffer as an SVG byte map (up to 16384 bytes).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// Element storage of a layout: BF16 (CastTess, MLA outputs), INT8 (QuantTess, MLA
/// outputs), INT16 or INT32 (MLA outputs, SPEC §12.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TiledDType {
    /// bfloat16: two byte planes per pixel (CastTess).
    Bf16,
    /// int8: one byte plane (QuantTess).
    I8,
    /// int16: two byte planes (MLA outputs).
    I16,
    /// int32: four byte planes (MLA outputs).
    I32,
}

impl TiledDType {
    /// Byte planes per element: 1, 2 or 4.
    fn planes(self) -> u8 {
        match self {
            TiledDType::I8 => 1,
            TiledDType::Bf16 | TiledDType::I16 => 2,
            TiledDType::I32 => 4,
        }
    }

    /// The dtype's name.
    fn name(self) -> &'static str {
        match self {
            TiledDType::Bf16 => "bf16",
            TiledDType::I8 => "i8",
            TiledDType::I16 => "i16",
            TiledDType::I32 => "i32",
        }
    }
}

#[derive(Debug, Serialize)]
struct Role {
    role: &'static str,
    axis: Option<u8>,
    extent: u64,
    tile: u32,
    tiles: u64,
}

#[derive(Debug, Serialize)]
struct Class {
    count_per_outer: u64,
    extents: [u64; 4],
    stored_channels: u64,
    payload_bytes: u64,
    bytes: u64,
}

#[derive(Debug, Serialize)]
struct TileRow {
    outer: u64,
    index: [u64; 4],
    extents: [u64; 4],
    offset: u64,
    bytes: u64,
}

/// What `simak layout` prints: the tile grid of the shape.
#[derive(Debug, Serialize)]
pub struct LayoutSummary {
    command: &'static str,
    shape: Vec<u64>,
    dtype: &'static str,
    planes: usize,
    channels: &'static str,
    roles: Vec<Role>,
    outer_axes: Vec<u8>,
    outer_count: u64,
    tile_counts: [u64; 4],
    tiles_per_outer: u64,
    classes: Vec<Class>,
    bytes_per_outer: u64,
    capacity_bytes: u64,
    elements: u64,
    logical_bytes: u64,
    first_tiles: Vec<TileRow>,
    svg: Option<String>,
}

/// The ≤ 16 tile classes (full or boundary tile per role) that occur, with their count per
/// outer index: the library's [`TiledView::tile_classes`].
fn classes(view: &TiledView) -> Vec<Class> {
    view.tile_classes()
        .iter()
        .filter(|c| c.count != 0)
        .map(|c| {
            let ext = c.extents;
            let sc = view.stored_channels(ext[3]).unwrap_or(0);
            Class {
                count_per_outer: c.count,
                extents: ext,
                stored_channels: sc,
                payload_bytes: ext[0] * ext[1] * ext[2] * sc * view.planes() as u64,
                bytes: view.tile_bytes(ext).unwrap_or(0),
            }
        })
        .collect()
}

/// Every tile in storage order (outer, C, D, H, W), calling `f` until it returns false: the
/// library's [`TiledView::tiles`].
fn for_each_tile(view: &TiledView, mut f: impl FnMut(TileRow) -> bool) {
    for t in view.tiles() {
        let row = TileRow {
            outer: t.outer,
            index: t.index,
            extents: t.extents,
            offset: t.offset,
            bytes: t.bytes,
        };
        if !f(row) {
            return;
        }
    }
}

/// Runs `simak layout`.
///
/// # Errors
///
/// Bad input (exit 2) for a layout the library refuses or an SVG request above
/// [`SVG_MAX_BYTES`]; internal otherwise.
pub fn run(args: LayoutArgs, _ctx: &Context) -> Result<Done<LayoutSummary>, CliError> {
    let shape = &args.shape.0;
    let bad = |rule: String| CliError::Input(format!("layout {}: {rule}", shape_text(shape)));
    let view = args
        .layout
        .layout()
        .with_tile_align(args.tile_align)
        .admit(shape, args.dtype.planes())
        .map_err(|e| bad(layout_rule(e)))?;
    let svg_target = match &args.svg {
        Some(svg) if view.capacity() > SVG_MAX_BYTES => {
            return Err(bad_file(
                svg,
                format!(
                    "--svg draws buffers up to {SVG_MAX_BYTES} bytes; this layout needs {} bytes (try a smaller shape)",
                    view.capacity()
                ),
            ));
        }
        Some(svg) => Some(Target::new("--svg", svg, Format::Svg)?),
        None => None,
    };
    let roles: Vec<Role> = TileAxis::ALL
        .iter()
        .map(|&r| Role {
            role: r.name(),
            axis: view.layout().axes[r.slot()],
            extent: view.role_extents()[r.slot()],
            tile: view.tile()[r.slot()],
            tiles: view.tile_counts()[r.slot()],
        })
        .collect();
    let mut first = Vec::new();
    if args.tiles > 0 {
        for_each_tile(&view, |row| {
            first.push(row);
            first.len() < args.tiles
        });
    }
    let summary = LayoutSummary {
        command: "layout",
        shape: shape.clone(),
        dtype: args.dtype.name(),
        planes: view.planes(),
        channels: view.channels().name(),
        roles,
        outer_axes: view.outer_axes().to_vec(),
        outer_count: view.outer_count(),
        tile_counts: *view.tile_counts(),
        tiles_per_outer: view.tiles_per_outer(),
        classes: if view.is_empty() {
            Vec::new()
        } else {
            classes(&view)
        },
        bytes_per_outer: view.bytes_per_outer(),
        capacity_bytes: view.capacity(),
        elements: view.elements(),
        logical_bytes: view.elements() * view.planes() as u64,
        first_tiles: first,
        svg: args.svg.as_ref().map(|p| p.display().to_string()),
    };
    let staged = match &svg_target {
        Some(target) => {
            let text = svg(&view, args.dtype.name());
            vec![target.stage(|w| w.write_all(text.as_bytes()))?]
        }
        None => Vec::new(),
    };
    Ok(Done { summary, staged })
}

impl report::Summary for LayoutSummary {
    fn text(&self) -> String {
        report_text(self)
    }
}

fn report_text(r: &LayoutSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "MlaTiled layout of shape {} as {} ({} byte plane{} per element), channels {}",
        shape_text(&r.shape),
        r.dtype,
        r.planes,
        if r.planes == 1 { "" } else { "s" },
        r.channels
    );
    for role in &r.roles {
        match role.axis {
            Some(a) => {
                let _ = writeln!(
                    out,
                    "  {}: logical axis {a}, extent {}, tile {}, {} tile{}",
                    role.role.to_uppercase(),
                    role.extent,
                    role.tile,
                    role.tiles,
                    if role.tiles == 1 { "" } else { "s" }
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {}: absent (extent 1, tile 1)",
                    role.role.to_uppercase()
                );
            }
        }
    }
    let outer: Vec<String> = r.outer_axes.iter().map(u8::to_string).collect();
    let _ = writeln!(
        out,
        "  outer axes: {} ({} outer ind{})",
        if outer.is_empty() {
            "none".to_owned()
        } else {
            outer.join(", ")
        },
        r.outer_count,
        if r.outer_count == 1 { "ex" } else { "ices" }
    );
    let _ = writeln!(
        out,
        "tile grid (D, H, W, C): {} = {} tile{} per outer index; storage order: outer, C, D, H, W (fastest)",
        shape_text(&r.tile_counts),
        r.tiles_per_outer,
        if r.tiles_per_outer == 1 { "" } else { "s" }
    );
    if !r.classes.is_empty() {
        let _ = writeln!(out, "tile classes (per outer index):");
        let _ = writeln!(
            out,
            "  {:>8}  {:<18}  {:>6}  {:>8}  {:>8}",
            "count", "extents (d,h,w,c)", "stored", "payload", "bytes"
        );
        for c in &r.classes {
            let _ = writeln!(
                out,
                "  {:>8}  {:<18}  {:>6}  {:>8}  {:>8}",
                c.count_per_outer,
                shape_text(&c.extents),
                c.stored_channels,
                c.payload_bytes,
                c.bytes
            );
        }
    }
    let _ = writeln!(
        out,
        "bytes per outer index {}; capacity {} bytes ({} elements x {} = {} logical bytes)",
        r.bytes_per_outer, r.capacity_bytes, r.elements, r.planes, r.logical_bytes
    );
    if !r.first_tiles.is_empty() {
        let _ = writeln!(out, "first tiles in storage order:");
        let _ = writeln!(
            out,
            "  {:>6}  {:<16}  {:<16}  {:>10}  {:>8}",
            "outer", "tile (d,h,w,c)", "extents", "offset", "bytes"
        );
        for t in &r.first_tiles {
            let _ = writeln!(
                out,
                "  {:>6}  {:<16}  {:<16}  {:>10}  {:>8}",
                t.outer,
                shape_text(&t.index),
                shape_text(&t.extents),
                t.offset,
                t.bytes
            );
        }
    }
    if let Some(p) = &r.svg {
        let _ = writeln!(out, "byte map written to {p}");
    }
    out
}

/// Short name of logical axis `axis`: its role letter, or `o<axis>` for an outer axis.
fn axis_name(view: &TiledView, axis: usize) -> String {
    for role in TileAxis::ALL {
        if view.layout().axes[role.slot()] == Some(axis as u8) {
            return role.name().to_owned();
        }
    }
    format!("o{axis}")
}

/// Escapes text for SVG content and attributes.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Draws the physical buffer as rows of 16 bytes. Each byte a logical element maps to is
/// colored by the element's row-major index (hue) and byte plane (light: low byte, dark:
/// high byte), labelled with its coordinates; padding bytes are grey. A tile of tile
/// alignment 16 starts a row; one of alignment 1 may start inside a row. An outline and a
/// label mark each tile.
/// Height of a byte cell of the SVG, in pixels.
const CELL_HEIGHT: u64 = 34;
/// Font size of a cell's coordinate label, in pixels.
const LABEL_FONT: u64 = 8;
/// Baseline distance of a label's lines, in pixels.
const LINE_STEP: u64 = 9;
/// Coordinates per label line (a rank-4 to rank-6 label takes two lines).
const LABEL_COORDS: usize = 3;

/// A cell's label: its logical coordinates, comma-separated, at most [`LABEL_COORDS`] a line.
fn label_lines(index: &[u64]) -> Vec<String> {
    index
        .chunks(LABEL_COORDS)
        .map(|c| c.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
        .collect()
}

/// Width of a byte cell whose longest label line has `chars` characters: at least 34
/// pixels, and the line's monospace width (0.6 em a character) plus a 3-pixel margin on
/// each side.
fn cell_width(chars: usize) -> u64 {
    (chars as u64 * LABEL_FONT * 3)
        .div_ceil(5)
        .saturating_add(6)
        .max(34)
}

fn svg(view: &TiledView, dtype: &str) -> String {
    const CELL: u64 = CELL_HEIGHT;
    const LEFT: u64 = 64;
    const TOP: u64 = 64;
    const RIGHT: u64 = 220;
    let capacity = view.capacity();
    let rows = capacity.div_ceil(16);
    let planes = view.planes();
    let rank = view.rank();
    let extents = view.extents();
    let elements = view.elements();
    // Which (element, plane) lands on each byte.
    let mut owner: Vec<Option<(u64, [u64; MAX_RANK], usize)>> = vec![None; capacity as usize];
    let mut index = [0u64; MAX_RANK];
    for linear in 0..elements {
        for p in 0..planes {
            if let Some(o) = view.offset_of(&index, p)
                && let Some(slot) = owner.get_mut(o as usize)
            {
                *slot = Some((linear, index, p));
            }
        }
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < extents[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    let names: Vec<String> = (0..rank).map(|a| axis_name(view, a)).collect();
    // Cells are as wide as their longest label line needs (coordinates in lines of at most
    // LABEL_COORDS), so that labels of neighbouring cells never overlap at any rank.
    let longest = owner
        .iter()
        .flatten()
        .flat_map(|(_, idx, _)| label_lines(&idx[..rank]))
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0);
    let cw = cell_width(longest);
    let map_width = LEFT + 16 * cw + RIGHT;
    let height = TOP + rows * CELL + 24;
    let layout = view.layout();
    let axes: Vec<String> = TileAxis::ALL
        .iter()
        .map(|r| match layout.axes[r.slot()] {
            Some(a) => format!("{}={a}", r.name().to_uppercase()),
            None => format!("{}=-", r.name().to_uppercase()),
        })
        .collect();
    let title = format!(
        "MlaTiled {} shape {} axes {} tile {} {}: {} bytes",
        dtype,
        shape_text(&extents[..rank]),
        axes.join(" "),
        shape_text(&layout.tile.map(u64::from)),
        layout.channels.name(),
        capacity
    );
    let legend = if planes == 2 {
        "cell: the element's logical coordinates in axis order (hover for the axis names: d h w c roles, oN outer axes); light = low byte, dark = high byte; grey = zero padding"
    } else if planes == 4 {
        "cell: the element's logical coordinates in axis order (hover for the axis names: d h w c roles, oN outer axes); b0 (light) = least significant byte .. b3; grey = zero padding"
    } else {
        "cell: the element's logical coordinates in axis order (hover for the axis names: d h w c roles, oN outer axes); grey = zero padding"
    };
    // Wide enough for the title (14 px) and the legend (10 px) too, at 0.6 em a character
    // with an 8-pixel margin on each side.
    let text_width = |chars: usize, font: u64| (chars as u64 * font * 3).div_ceil(5) + 16;
    let width = map_width
        .max(text_width(title.chars().count(), 14))
        .max(text_width(legend.chars().count(), 10));
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="8" y="20" font-size="14">{}</text>"##,
        esc(&title)
    );
    let _ = writeln!(
        s,
        r##"<text x="8" y="40" font-size="10" fill="#444">{}</text>"##,
        esc(legend)
    );
    for col in 0..16u64 {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="9" text-anchor="middle" fill="#666">+{col}</text>"##,
            LEFT + col * cw + cw / 2,
            TOP - 6
        );
    }
    for row in 0..rows {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="9" text-anchor="end" fill="#666">{}</text>"##,
            LEFT - 6,
            TOP + row * CELL + CELL / 2 + 3,
            row * 16
        );
    }
    for (offset, cell) in owner.iter().enumerate() {
        let offset = offset as u64;
        let x = LEFT + (offset % 16) * cw;
        let y = TOP + (offset / 16) * CELL;
        match cell {
            Some((linear, idx, plane)) => {
                let hue = if elements > 1 {
                    300 * linear / (elements - 1)
                } else {
                    0
                };
                let light = if *plane == 0 { 78 } else { 55 };
                let lines = label_lines(&idx[..rank]);
                let top = y + CELL / 2 + 1 - (lines.len().saturating_sub(1) as u64) * LINE_STEP / 2;
                let label: String = lines
                    .iter()
                    .enumerate()
                    .map(|(k, line)| {
                        format!(
                            r##"<text x="{}" y="{}" font-size="{LABEL_FONT}" text-anchor="middle">{}</text>"##,
                            x + cw / 2,
                            top + k as u64 * LINE_STEP,
                            esc(line)
                        )
                    })
                    .collect();
                let named: Vec<String> = names
                    .iter()
                    .zip(idx[..rank].iter())
                    .map(|(n, i)| format!("{n}={i}"))
                    .collect();
                let plane_name = match (planes, plane) {
                    (1, _) => "int8".to_owned(),
                    (2, 0) => "low byte".to_owned(),
                    (2, _) => "high byte".to_owned(),
                    (_, p) => format!("byte {p} (least significant first)"),
                };
                let _ = writeln!(
                    s,
                    r##"<g><title>byte {offset}: element ({}) {plane_name}</title><rect x="{x}" y="{y}" width="{cw}" height="{CELL}" fill="hsl({hue},70%,{light}%)" stroke="white"/>{label}{}</g>"##,
                    esc(&named.join(", ")),
                    if planes > 1 {
                        format!(
                            r##"<text x="{}" y="{}" font-size="7" text-anchor="middle" fill="#333">{}</text>"##,
                            x + cw / 2,
                            y + CELL - 3,
                            match (planes, *plane) {
                                (2, 0) => "lo".to_owned(),
                                (2, _) => "hi".to_owned(),
                                (_, p) => format!("b{p}"),
                            }
                        )
                    } else {
                        String::new()
                    }
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    r##"<g><title>byte {offset}: zero padding</title><rect x="{x}" y="{y}" width="{cw}" height="{CELL}" fill="#e4e4e4" stroke="white"/></g>"##
                );
            }
        }
    }
    for_each_tile(view, |t| {
        let y = TOP + (t.offset / 16) * CELL;
        if t.offset % 16 == 0 && t.bytes % 16 == 0 {
            let h = t.bytes / 16 * CELL;
            let _ = writeln!(
                s,
                r##"<rect x="{LEFT}" y="{y}" width="{}" height="{h}" fill="none" stroke="black" stroke-width="2"/>"##,
                16 * cw
            );
        } else {
            // Tile alignment 1 (SPEC §12.1): a tile may start or end inside a row; outline
            // its part of each row it touches.
            let end = t.offset + t.bytes;
            let mut at = t.offset;
            while at < end {
                let row_end = (at / 16 + 1) * 16;
                let stop = end.min(row_end);
                let _ = writeln!(
                    s,
                    r##"<rect x="{}" y="{}" width="{}" height="{CELL}" fill="none" stroke="black" stroke-width="2"/>"##,
                    LEFT + (at % 16) * cw,
                    TOP + (at / 16) * CELL,
                    (stop - at) * cw
                );
                at = stop;
            }
        }
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="10">outer {} tile {} ({} B)</text>"##,
            LEFT + 16 * cw + 8,
            y + 14,
            t.outer,
            esc(&shape_text(&t.index)),
            t.bytes
        );
        true
    });
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod test {
    use super::*;
    use simak::layout::Channels;
    use simak::layout::MlaTiled;

    #[test]
    fn spec_example_svg_maps_twelve_bytes() {
        let view = crate::tess::test::spec_example();
        let text = svg(&view, "bf16");
        assert_eq!(text.matches("zero padding</title>").count(), 4);
        assert_eq!(text.matches("low byte</title>").count(), 6);
        assert_eq!(text.matches("high byte</title>").count(), 6);
        assert!(text.contains("byte 8: element (w=1, c=2) low byte"));
        assert!(text.contains("byte 11: element (w=1, c=2) high byte"));
        let c = classes(&view);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].payload_bytes, c[0].bytes), (12, 16));
    }

    /// The text boxes of an SVG: `(left, top, right, bottom)` from each `<text>` element's
    /// `x`, `y`, `font-size` and `text-anchor` (monospace, 0.6 em a character, ascent 0.8
    /// em, descent 0.2 em).
    fn text_boxes(svg: &str) -> Vec<(f64, f64, f64, f64, String)> {
        let attr = |tag: &str, name: &str| -> Option<f64> {
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            tag[at..].split('"').next()?.parse().ok()
        };
        let mut boxes = Vec::new();
        for piece in svg.split("<text").skip(1) {
            let (tag, rest) = piece.split_once('>').unwrap();
            let content = rest.split("</text>").next().unwrap().to_owned();
            let (x, y, size) = (
                attr(tag, "x").unwrap(),
                attr(tag, "y").unwrap(),
                attr(tag, "font-size").unwrap(),
            );
            let w = content.chars().count() as f64 * 0.6 * size;
            let left = match () {
                _ if tag.contains("text-anchor=\"middle\"") => x - w / 2.0,
                _ if tag.contains("text-anchor=\"end\"") => x - w,
                _ => x,
            };
            boxes.push((left, y - 0.8 * size, left + w, y + 0.2 * size, content));
        }
        boxes
    }

    #[test]
    fn svg_labels_never_overlap_at_rank_4_to_6() {
        type Case = (&'static [u64], [Option<u8>; 4], [u32; 4]);
        let cases: [Case; 3] = [
            (
                &[2, 3, 12, 5],
                [Some(0), Some(1), Some(2), Some(3)],
                [2, 2, 8, 5],
            ),
            (
                &[2, 2, 3, 11, 3],
                [None, Some(2), Some(3), Some(4)],
                [1, 3, 8, 3],
            ),
            (
                &[2, 2, 2, 3, 10, 3],
                [Some(2), Some(3), Some(4), Some(5)],
                [1, 2, 4, 3],
            ),
        ];
        for (shape, axes, tile) in cases {
            let view = MlaTiled::new(axes, tile, Channels::Compact)
                .admit(shape, 2)
                .unwrap();
            let text = svg(&view, "bf16");
            let boxes = text_boxes(&text);
            let width: f64 = text
                .split("width=\"")
                .nth(1)
                .and_then(|w| w.split('"').next())
                .and_then(|w| w.parse().ok())
                .unwrap();
            for b in &boxes {
                assert!(
                    b.0 >= 0.0 && b.2 <= width,
                    "{b:?} leaves the {width}-pixel drawing"
                );
            }
            let labels = boxes.iter().filter(|b| b.4.contains(',')).count();
            assert!(
                labels as u64 >= view.elements() * 2,
                "every byte is labelled"
            );
            // Pairs of boxes that both lie in the byte map (skip the title lines on top).
            let map: Vec<_> = boxes.iter().filter(|b| b.1 >= 50.0).collect();
            for (i, a) in map.iter().enumerate() {
                for b in &map[i + 1..] {
                    let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                    assert!(apart, "rank {}: {a:?} overlaps {b:?}", shape.len());
                }
            }
        }
    }

    #[test]
    fn classes_cover_boundary_tiles() {
        let view = MlaTiled::new(
            [None, Some(1), Some(2), Some(3)],
            [1, 2, 3, 16],
            Channels::PadTo16,
        )
        .admit(&[2, 5, 7, 17], 2)
        .unwrap();
        let c = classes(&view);
        let tiles: u64 = c.iter().map(|c| c.count_per_outer).sum();
        assert_eq!(tiles, view.tiles_per_outer());
        let bytes: u64 = c.iter().map(|c| c.count_per_outer * c.bytes).sum();
        assert_eq!(bytes, view.bytes_per_outer());
        let mut n = 0;
        let mut next = 0;
        for_each_tile(&view, |t| {
            assert_eq!(t.offset, next);
            next += t.bytes;
            n += 1;
            true
        });
        assert_eq!(next, view.capacity());
        assert_eq!(n, 2 * view.tiles_per_outer());
    }
}
