#!/usr/bin/python3
"""Unit tests of the hub's spawner and authenticator that need no root, no
users and no running hub (test-hub.sh checks the rest end to end):

    /usr/bin/python3 deploy/hub/test_gpumem.py
"""
import asyncio
import io
import os
import sys
import tempfile
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jupyterhub.auth import PAMAuthenticator  # noqa: E402

from gpumem_auth import ClassAuthenticator  # noqa: E402
from gpumem_spawner import CgroupSpawner  # noqa: E402


async def fake_pam(self, handler, data):
    """PAM stand-in: the password "right" is right for every name."""
    return data["username"] if data["password"] == "right" else None


class TestThrottle(unittest.TestCase):
    def login(self, auth, name, password):
        return asyncio.run(auth.authenticate(None, {"username": name, "password": password}))

    @mock.patch.object(PAMAuthenticator, "authenticate", fake_pam)
    def test_lockout(self):
        auth = ClassAuthenticator(max_failures=5, lockout=1)
        self.assertEqual(self.login(auth, "ada", "right"), "ada")
        for _ in range(5):
            self.assertIsNone(self.login(auth, "ada", "wrong"))
        self.assertIsNone(self.login(auth, "ada", "right"), "the right password must be refused while locked")
        self.assertEqual(self.login(auth, "bob", "right"), "bob", "another name is not locked")
        time.sleep(1.1)
        self.assertEqual(self.login(auth, "ada", "right"), "ada", "the lock ends after lockout seconds")

    @mock.patch.object(PAMAuthenticator, "authenticate", fake_pam)
    def test_success_resets(self):
        auth = ClassAuthenticator(max_failures=3, lockout=60)
        for _ in range(2):
            self.login(auth, "ada", "wrong")
        self.assertEqual(self.login(auth, "ada", "right"), "ada")
        for _ in range(2):
            self.login(auth, "ada", "wrong")
        self.assertEqual(self.login(auth, "ada", "right"), "ada", "failures before a success do not count")

    @mock.patch.object(PAMAuthenticator, "authenticate", fake_pam)
    def test_admin_rate_limited_not_locked(self):
        auth = ClassAuthenticator(max_failures=3, lockout=60, admin_interval=1, admin_users={"teacher"})
        for _ in range(3):
            self.assertIsNone(self.login(auth, "teacher", "wrong"))
        self.assertEqual(self.login(auth, "teacher", "right"), "teacher", "the admin gets an attempt")
        for _ in range(3):
            self.login(auth, "teacher", "wrong")
        self.assertIsNone(self.login(auth, "teacher", "right"), "at most one attempt a second")
        time.sleep(1.1)
        self.assertEqual(self.login(auth, "teacher", "right"), "teacher", "after admin_interval, not after lockout")

    def test_flood_from_one_address(self):
        """20 wrong logins at once from one address, each held 0.5 s in
        PAM, and a classmate's right one from another: hers is answered
        at once, and the flood holds at most per_source conversations."""
        inside = {"now": 0, "most": 0}

        async def slow_pam(self, handler, data):
            inside["now"] += 1
            inside["most"] = max(inside["most"], inside["now"])
            await asyncio.sleep(0.5 if data["password"] != "right" else 0.01)
            inside["now"] -= 1
            return data["username"] if data["password"] == "right" else None

        def handler(ip):
            h = mock.Mock()
            h.request.remote_ip = ip
            return h

        async def scene(auth):
            flood = [asyncio.create_task(auth.authenticate(handler("10.0.0.66"), {"username": "made-up-%d" % i, "password": "x"}))
                     for i in range(20)]
            await asyncio.sleep(0.05)
            t0 = time.monotonic()
            ok = await auth.authenticate(handler("10.0.0.7"), {"username": "ada", "password": "right"})
            took = time.monotonic() - t0
            await asyncio.gather(*flood)
            return ok, took

        with mock.patch.object(PAMAuthenticator, "authenticate", slow_pam):
            auth = ClassAuthenticator(per_source=2)
            ok, took = asyncio.run(scene(auth))
        self.assertEqual(ok, "ada")
        self.assertLess(took, 0.3, "the classmate waited for the flood")
        self.assertLessEqual(inside["most"], 3, "the flood held more than per_source PAM conversations")
        self.assertEqual(auth._in_pam, {}, "nothing is left counted")

    def test_pam_threads(self):
        self.assertEqual(ClassAuthenticator(pam_threads=8).executor._max_workers, 8)

    def test_allowed(self):
        auth = ClassAuthenticator(allowed_groups={"gpumem-no-such-group"}, admin_users={"teacher"})
        self.assertTrue(auth.check_allowed("teacher"))
        self.assertFalse(auth.check_allowed("root"), "an account outside the group is refused")


class TestConfig(unittest.TestCase):
    """jupyterhub_config.py, loaded as JupyterHub loads it."""

    def load(self, **env):
        from traitlets.config import Config
        config = Config()
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jupyterhub_config.py")
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        self.state = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, self.state)
        # test_network_namespaces mocks ip; test_old_jupyterhub_refused
        # drops the acceptance.
        env = dict({"GPUMEM_NETNS": "0", "GPUMEM_ACCEPT_CVE_2024_28233": "1"}, **env)
        env = {k: v for k, v in env.items() if v is not None}
        for k in ("GPUMEM_ACCEPT_CVE_2024_28233", "GPUMEM_SUBDOMAIN_HOST"):
            if k not in env:
                os.environ.pop(k, None)
        with mock.patch.dict(os.environ, dict(env, GPUMEM_HUB_STATE=self.state), clear=False):
            exec(code, {"get_config": lambda: config, "__file__": path})
        return config

    def test_plain_http_only_on_loopback(self):
        c = self.load(GPUMEM_HUB_IP="127.0.0.1")
        self.assertEqual(c.JupyterHub.ip, "127.0.0.1")
        with self.assertRaisesRegex(SystemExit, "without TLS"):
            self.load(GPUMEM_HUB_IP="0.0.0.0")
        c = self.load(GPUMEM_HUB_IP="0.0.0.0", GPUMEM_SSL_CERT="/etc/gpumem/hub.crt", GPUMEM_SSL_KEY="/etc/gpumem/hub.key")
        self.assertEqual(c.JupyterHub.ssl_cert, "/etc/gpumem/hub.crt")

    def test_logins(self):
        c = self.load(GPUMEM_ADMINS="teacher")
        self.assertEqual(c.ClassAuthenticator.allowed_groups, {"students"})
        self.assertEqual(c.CgroupSpawner.student_group, "students")
        self.assertEqual(c.Authenticator.admin_users, {"teacher"})
        self.assertEqual(c.JupyterHub.authenticator_class.__name__, "ClassAuthenticator")

    def test_servers_open_jupyterlab_where_installed(self):
        import importlib.util
        real = importlib.util.find_spec

        def find_spec(name, *args):
            if name == "jupyterlab":
                return lab
            return real(name, *args)
        for lab, url, said in ((object(), "/lab", ""), (None, "/tree", "classic Notebook")):
            with mock.patch("importlib.util.find_spec", find_spec), \
                    mock.patch("sys.stderr", new_callable=io.StringIO) as log:
                c = self.load()
            self.assertEqual(c.Spawner.default_url, url, "jupyterlab importable: %s" % (lab is not None))
            self.assertEqual(c.Spawner.notebook_dir, "~/course/notebooks")
            if said:
                self.assertIn(said, log.getvalue(), "the fallback is said in the hub's log")
                said_lines = [l for l in log.getvalue().splitlines() if "JupyterLab" in l]
                self.assertEqual(len(said_lines), 1, "in one line")
            else:
                self.assertNotIn("Notebook", log.getvalue())

    def test_old_jupyterhub_refused(self):
        import jupyterhub
        for version, extra, refused in (("3.0.0", {}, True),
                                        ("4.0.2", {}, True),
                                        ("3.0.0", {"GPUMEM_SUBDOMAIN_HOST": "https://class.example.org"}, False),
                                        ("4.1.0", {}, False),
                                        ("5.2.1", {}, False)):
            env = dict(extra, GPUMEM_ACCEPT_CVE_2024_28233=None)
            with mock.patch.object(jupyterhub, "__version__", version), \
                    mock.patch("sys.stderr", new_callable=io.StringIO):
                if refused:
                    with self.assertRaisesRegex(SystemExit, "CVE-2024-28233", msg=version):
                        self.load(**env)
                else:
                    c = self.load(**env)
                    if extra:
                        self.assertEqual(c.JupyterHub.subdomain_host, "https://class.example.org")
        with mock.patch.object(jupyterhub, "__version__", "3.0.0"), \
                mock.patch("sys.stderr", new_callable=io.StringIO) as log:
            self.load(GPUMEM_ACCEPT_CVE_2024_28233="1")
        self.assertIn("CVE-2024-28233 accepted", log.getvalue(), "the acceptance is said in the hub's log")

    def test_network_namespaces(self):
        import subprocess
        calls = []

        def run(cmd, **kw):
            calls.append(cmd)
            return subprocess.CompletedProcess(cmd, 0, stdout="1: lo    inet 127.0.0.1/8 scope host lo\n", stderr="")
        with mock.patch("subprocess.run", run):
            c = self.load(GPUMEM_NETNS="1")
        self.assertEqual(c.JupyterHub.hub_ip, "10.214.0.1", "the hub's API on the address the namespaces reach")
        self.assertTrue(c.CgroupSpawner.network_namespace)
        self.assertIn(["ip", "addr", "add", "10.214.0.1/32", "dev", "lo"], calls)
        c = self.load(GPUMEM_NETNS="0")
        self.assertEqual(c.JupyterHub.hub_ip, "127.0.0.1")
        self.assertFalse(c.CgroupSpawner.network_namespace)

    def test_admins_land_on_the_admin_page(self):
        land = self.load().JupyterHub.default_url
        handler = mock.Mock(settings={"login_url": "/hub/login"})
        handler.hub.base_url = "/hub/"
        handler.current_user = None
        self.assertEqual(land(handler), "/hub/login")
        handler.current_user = mock.Mock(admin=True)
        self.assertEqual(land(handler), "/hub/admin", "an admin gets no server and lands on none")
        handler.current_user = mock.Mock(admin=False, url="/user/ada/")
        handler.current_user.spawner.active = True
        self.assertEqual(land(handler), "/user/ada/")
        handler.current_user.spawner.active = False
        self.assertEqual(land(handler), "/hub/spawn")

    def test_state_stays_in_state_folder(self):
        c = self.load()
        for path in (c.JupyterHub.pid_file, c.ConfigurableHTTPProxy.pid_file, c.JupyterHub.cookie_secret_file):
            self.assertEqual(os.path.dirname(path), self.state)


class TestServedApp(unittest.TestCase):
    """login.py --open tells the front ends apart by their pages."""

    def test_pages(self):
        from login import served_app
        lab = ('<html><head><script id="jupyter-config-data" type="application/json">'
               '{"appName": "JupyterLab", "appVersion": "4.0.11", "baseUrl": "/user/a/"}</script></head></html>')
        self.assertEqual(served_app(lab), "JupyterLab 4.0.11")
        self.assertEqual(served_app('<div id="notebook_list"></div>'), "the classic Notebook")
        self.assertIsNone(served_app('<script id="jupyter-config-data" type="application/json">{"appName": "Jupyter Notebook"}</script>'))
        self.assertIsNone(served_app('<script id="jupyter-config-data" type="application/json">{not json</script>'))
        self.assertIsNone(served_app("<html>404: Not Found</html>"))


class TestCgroupParent(unittest.TestCase):
    """cgroup v2: the students' groups go in the hub's delegated cgroup,
    also after the hub moved itself into its "hub" leaf."""

    def parent(self, own, configured=""):
        spawner = CgroupSpawner(cgroup_parent=configured)
        with mock.patch.object(CgroupSpawner, "_v2", return_value=True), \
                mock.patch("gpumem_spawner._own_cgroup_v2", return_value=own):
            return spawner._parent()

    def test_parent(self):
        unit = "/system.slice/gpumem-hub.service"
        self.assertEqual(self.parent(unit), unit)
        self.assertEqual(self.parent(unit + "/hub"), unit)
        self.assertEqual(self.parent("/"), "/gpumem-hub", "not delegated: a group of its own at the top")
        self.assertEqual(self.parent(unit, configured="/gpumem-hub-test"), "/gpumem-hub-test")


class TestStudentsOnly(unittest.TestCase):
    """Only members of the student group, with a uid of 1000 or more, get
    a server: once, an admin's token started one for postgres (uid 101),
    whose home the spawner then changed."""

    def student(self, name, uid, gid=2000, members=("ada",)):
        import grp
        import pwd
        spawner = CgroupSpawner(student_group="students")
        spawner.user = mock.Mock()
        spawner.user.name = name
        account = pwd.struct_passwd((name, "x", uid, gid, "", "/home/" + name, "/bin/sh"))
        group = grp.struct_group(("students", "x", 3000, list(members)))
        with mock.patch("pwd.getpwnam", return_value=account), mock.patch("grp.getgrnam", return_value=group):
            return spawner._student()

    def test_member(self):
        self.assertEqual(self.student("ada", 1001).pw_uid, 1001)
        self.assertEqual(self.student("bea", 1002, gid=3000, members=()).pw_uid, 1002, "the group as primary group")

    def test_refused(self):
        for name, uid, want in (("teacher", 1005, "not in the group students"),
                                ("postgres", 101, "a system account gets no server"),
                                ("ada", 0, "a system account gets no server")):
            with self.assertRaisesRegex(RuntimeError, want, msg=name):
                self.student(name, uid)

    def test_looked_up_once(self):
        """A start looks the account and its groups up once (NSS may be
        LDAP), not at each of its steps."""
        import grp
        import pwd
        spawner = CgroupSpawner(student_group="students", tmp_size="1G")
        spawner.user = mock.Mock()
        spawner.user.name = "ada"
        account = pwd.struct_passwd(("ada", "x", 1001, 2000, "", "/home/ada", "/bin/sh"))
        group = grp.struct_group(("students", "x", 3000, ["ada"]))
        with mock.patch("pwd.getpwnam", return_value=account) as getpwnam, \
                mock.patch("grp.getgrnam", return_value=group), \
                mock.patch("grp.getgrall", return_value=[group]) as getgrall:
            student, gids = spawner._lookup_account()
            self.assertEqual(gids, [2000, 3000])
            spawner._as_student([], private_mounts=False)
            spawner._as_student([], private_mounts=True)
            self.assertEqual(spawner._account_now()[0].pw_dir, "/home/ada")
            self.assertEqual((getpwnam.call_count, getgrall.call_count), (1, 1))

    def test_unknown_account(self):
        spawner = CgroupSpawner()
        spawner.user = mock.Mock()
        spawner.user.name = "gpumem-no-such-user"
        with self.assertRaisesRegex(RuntimeError, "no Unix account"):
            spawner._student()


class TestStudentLinks(unittest.TestCase):
    def test_addresses(self):
        from gpumem_spawner import student_link
        self.assertEqual(student_link(1000, 1000), ("10.213.0.1", "10.213.0.2", "gpm1000"))
        self.assertEqual(student_link(1065, 1000), ("10.213.1.5", "10.213.1.6", "gpm1065"))
        self.assertEqual(student_link(1000 + 16383, 1000)[1], "10.213.255.254")
        for uid in (999, 1000 + 16384):
            with self.assertRaisesRegex(RuntimeError, "outside the 16384 students"):
                student_link(uid, 1000)
        links = {student_link(u, 1000)[0] for u in range(1000, 1100)}
        self.assertEqual(len(links), 100, "each student a link of their own")


class TestCourse(unittest.TestCase):
    def test_instructor_files_refused(self):
        for part in ("solutions", os.path.join("grader", "hidden")):
            with tempfile.TemporaryDirectory() as course:
                os.makedirs(os.path.join(course, "notebooks"))
                spawner = CgroupSpawner(course_dir=course)
                spawner._check_course()  # the student edition: accepted
                os.makedirs(os.path.join(course, part))
                with self.assertRaisesRegex(RuntimeError, "student edition only"):
                    spawner._check_course()

    def test_disk_limit_enforced_or_refused(self):
        # Without quota support (or without root) the server must not start
        # unlimited: the limit is set, or start fails saying why.
        spawner = CgroupSpawner(disk_limit="1G")
        spawner._student = lambda: mock.Mock(pw_name="gpumem-no-such-user", pw_dir="/nonexistent")
        spawner.user = mock.Mock()
        spawner.user.name = "gpumem-no-such-user"
        with self.assertRaisesRegex(RuntimeError, "GPUMEM_DISK_LIMIT=1073741824 bytes"):
            asyncio.run(spawner._set_quota())

    def test_inode_limit_goes_with_disk_limit(self):
        self.assertEqual(CgroupSpawner(disk_limit="1G").inodes(), 131072)
        self.assertEqual(CgroupSpawner(disk_limit="100M").inodes(), 50000)
        self.assertEqual(CgroupSpawner(disk_limit="1G", inode_limit=7).inodes(), 7)

    def test_missing_course_refused(self):
        with self.assertRaisesRegex(RuntimeError, "no course folder"):
            CgroupSpawner(course_dir="/nonexistent/gpumem-course")._check_course()


if __name__ == "__main__":
    unittest.main()
