// Command kalab runs declarative HTTP connection-reuse scenarios and checks their results.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }
