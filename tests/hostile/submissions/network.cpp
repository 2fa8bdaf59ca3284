// expect: AC
// threat: reach the network (the host's PostgreSQL and Redis on loopback, or the internet)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static bool reaches(const char* ip, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, ip, &addr.sin_addr);
    bool ok = connect(fd, (sockaddr*)&addr, sizeof addr) == 0;
    close(fd);
    return ok;
}

extern "C" void run_kernel(const float* a, const float* b, float* c, int n) {
    bool leaked = reaches("127.0.0.1", 5432) || reaches("127.0.0.1", 6379) || reaches("1.1.1.1", 53);
    for (int i = 0; i < n; ++i) c[i] = leaked ? 0.f : a[i] + b[i];
}
