// contained: nothing outside the scratch directory can be written
use std::fs;
fn main() {
    for path in ["/etc/spade_canary", "/usr/spade_canary", "CANARY_DIR/spade_canary", "/root/spade_canary", "/var/tmp/spade_canary"] {
        match fs::write(path, b"escaped") {
            Ok(_) => println!("wrote {}", path),
            Err(_) => println!("refused"),
        }
    }
}
