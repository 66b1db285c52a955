package netsim

// DescriptorsPerConn is how many file descriptors one simulated connection
// uses when client, proxy and server share a process: the client socket,
// the proxy's two sockets and the server's accepted socket.
const DescriptorsPerConn = 4
