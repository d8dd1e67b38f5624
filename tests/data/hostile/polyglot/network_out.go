// contained: no network: every connection fails
package main

import (
	"fmt"
	"net"
	"time"
)

func main() {
	for _, addr := range []string{"127.0.0.1:PORT", "1.1.1.1:53", "[::1]:PORT"} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			fmt.Println("connected", addr)
		} else {
			fmt.Println("blocked")
		}
	}
}
