! A Fortran program's own metrics through pano's C API (lib/metric.h), by
! ISO_C_BINDING: under pano-monitor they go to its metrics socket, elsewhere
! through the configured sink (the broker, or the embedded store).
!
!   residuals [N]   N iterations (default 10): residual = 1/i, tag solver=cg
module pano_metrics
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    ! pano_metrics *pano_metrics_open(const pano_config *cfg, char *err, size_t errlen)
    function pano_metrics_open(cfg, err, errlen) bind(C, name="pano_metrics_open")
      import :: c_ptr, c_char, c_size_t
      type(c_ptr), value :: cfg
      character(kind=c_char), dimension(*) :: err
      integer(c_size_t), value :: errlen
      type(c_ptr) :: pano_metrics_open
    end function
    ! int pano_metric(pano_metrics *m, const char *name, double value, int level,
    !                 const char *const *tags, char *err, size_t errlen)
    function pano_metric(m, name, value, level, tags, err, errlen) bind(C, name="pano_metric")
      import :: c_ptr, c_char, c_double, c_int, c_size_t
      type(c_ptr), value :: m
      character(kind=c_char), dimension(*) :: name
      real(c_double), value :: value
      integer(c_int), value :: level
      type(c_ptr), value :: tags
      character(kind=c_char), dimension(*) :: err
      integer(c_size_t), value :: errlen
      integer(c_int) :: pano_metric
    end function
    ! void pano_metrics_close(pano_metrics *m)
    subroutine pano_metrics_close(m) bind(C, name="pano_metrics_close")
      import :: c_ptr
      type(c_ptr), value :: m
    end subroutine
  end interface
end module

program residuals
  use pano_metrics
  implicit none
  character(kind=c_char, len=256) :: err
  character(kind=c_char, len=16), target :: solver = "solver=cg" // c_null_char
  type(c_ptr), target :: tags(2)
  type(c_ptr) :: m
  character(len=16) :: arg
  integer :: i, n, rc

  n = 10
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  m = pano_metrics_open(c_null_ptr, err, int(len(err), c_size_t))
  if (.not. c_associated(m)) then
    print *, "pano_metrics_open: ", err(1:index(err, c_null_char) - 1)
    stop 1
  end if
  tags(1) = c_loc(solver)  ! "KEY=VALUE" strings, NULL-terminated
  tags(2) = c_null_ptr
  do i = 1, n
    rc = pano_metric(m, "residual" // c_null_char, 1.0d0 / i, 1_c_int, c_loc(tags), &
                     err, int(len(err), c_size_t))
    if (rc < 0) print *, "pano_metric: ", err(1:index(err, c_null_char) - 1)
  end do
  call pano_metrics_close(m)
end program
