mod analysis;

fn main() {
    println!("{}", kruise_lua_engine::smoke());
}
