// contained: touches ever more memory until the memory limit ends it
package main

func main() {
	var hoard [][]byte
	for {
		b := make([]byte, 1<<24)
		for i := range b {
			b[i] = 1
		}
		hoard = append(hoard, b)
	}
}
