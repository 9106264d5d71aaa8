#ifndef ROOST_CLINUXEVENTS_SHIM_H
#define ROOST_CLINUXEVENTS_SHIM_H
// Linux-only interfaces Glibc's Swift overlay does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>

// accept4(2) is declared only under _GNU_SOURCE, which the overlay's headers were not built with.
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
