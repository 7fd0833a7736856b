fn main() {
    let ptx = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
    println!("{}", ptx.len());
}
