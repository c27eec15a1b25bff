"""The catalog tests' schema: Chinese comments, a varchar ``status`` holding ``'paid'``, a
``password`` column, a view and foreign keys; the same tables in each dialect."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SECRET = "s3cr3t-hunter2"  # 张三's password: no masked answer may ever contain it
OTHER_SECRET = "pw-of-lisi"

SQLITE_DDL = """
CREATE TABLE sys_user ( -- 用户表
  id INTEGER PRIMARY KEY,
  name VARCHAR(64) NOT NULL, -- 姓名
  password VARCHAR(128), -- 登录密码
  api_key TEXT,
  dept_id INTEGER REFERENCES sys_dept(id), -- 部门
  status VARCHAR(16) DEFAULT 'active' -- 状态
);
CREATE TABLE sys_dept ( -- 部门表
  id INTEGER PRIMARY KEY,
  dept_name VARCHAR(64) -- 部门名称
);
CREATE TABLE orders ( -- 订单
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES sys_user(id),
  status VARCHAR(16) NOT NULL, -- 订单状态
  amount DECIMAL(10,2) -- 金额
);
CREATE TABLE ad_click ( -- 广告点击
  id INTEGER PRIMARY KEY,
  adId INTEGER,
  clickedAt TIMESTAMP
);
CREATE INDEX ix_orders_user ON orders(user_id, status);
CREATE UNIQUE INDEX ux_user_name ON sys_user(name);
CREATE VIEW paid_orders AS SELECT o.id, o.amount, u.name FROM orders o JOIN sys_user u ON u.id = o.user_id
  WHERE o.status = 'paid';
CREATE VIEW user_secrets AS SELECT name, password AS pw, upper(password) AS shout FROM sys_user;
"""

ROWS = [
    "INSERT INTO sys_dept VALUES (1, '研发部'), (2, 'Sales')",
    f"INSERT INTO sys_user VALUES (1, '张三', '{SECRET}', 'key-zs', 1, 'active'),"
    f" (2, '李四', '{OTHER_SECRET}', 'key-ls', 2, 'locked')",
    "INSERT INTO orders VALUES (1, 1, 'paid', 10.5), (2, 1, 'unpaid', 3), (3, 2, 'paid', 7)",
    "INSERT INTO ad_click VALUES (1, 7, '2026-01-01 00:00:00')",
]


def make_sqlite(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SQLITE_DDL)
    for statement in ROWS:
        db.execute(statement)
    db.commit()
    db.close()
    return path


PG_DDL = """
CREATE TABLE sys_dept (id INTEGER PRIMARY KEY, dept_name VARCHAR(64));
CREATE TABLE sys_user (
  id INTEGER PRIMARY KEY,
  name VARCHAR(64) NOT NULL UNIQUE,
  password VARCHAR(128),
  api_key TEXT,
  dept_id INTEGER REFERENCES sys_dept(id),
  status VARCHAR(16) DEFAULT 'active'
);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES sys_user(id),
  status VARCHAR(16) NOT NULL,
  amount NUMERIC(10,2)
);
CREATE TABLE ad_click (id INTEGER PRIMARY KEY, "adId" INTEGER, "clickedAt" TIMESTAMP);
CREATE INDEX ix_orders_user ON orders(user_id, status);
CREATE VIEW paid_orders AS SELECT o.id, o.amount, u.name FROM orders o JOIN sys_user u ON u.id = o.user_id
  WHERE o.status = 'paid';
CREATE VIEW user_secrets AS SELECT name, password AS pw, upper(password) AS shout FROM sys_user;
COMMENT ON TABLE sys_user IS '用户表';
COMMENT ON COLUMN sys_user.name IS '姓名';
COMMENT ON COLUMN sys_user.password IS '登录密码';
COMMENT ON COLUMN sys_user.dept_id IS '部门';
COMMENT ON COLUMN sys_user.status IS '状态';
COMMENT ON TABLE sys_dept IS '部门表';
COMMENT ON COLUMN sys_dept.dept_name IS '部门名称';
COMMENT ON TABLE orders IS '订单';
COMMENT ON COLUMN orders.status IS '订单状态';
COMMENT ON COLUMN orders.amount IS '金额';
COMMENT ON TABLE ad_click IS '广告点击';
"""

MYSQL_DDL = """
CREATE TABLE sys_dept (id INT PRIMARY KEY, dept_name VARCHAR(64) COMMENT '部门名称') COMMENT '部门表';
CREATE TABLE sys_user (
  id INT PRIMARY KEY,
  name VARCHAR(64) NOT NULL COMMENT '姓名',
  password VARCHAR(128) COMMENT '登录密码',
  api_key TEXT,
  dept_id INT COMMENT '部门',
  status VARCHAR(16) DEFAULT 'active' COMMENT '状态',
  UNIQUE KEY ux_user_name (name),
  FOREIGN KEY (dept_id) REFERENCES sys_dept(id)
) COMMENT '用户表';
CREATE TABLE orders (
  id INT PRIMARY KEY,
  user_id INT NOT NULL,
  status VARCHAR(16) NOT NULL COMMENT '订单状态',
  amount DECIMAL(10,2) COMMENT '金额',
  KEY ix_orders_user (user_id, status),
  FOREIGN KEY (user_id) REFERENCES sys_user(id)
) COMMENT '订单';
CREATE TABLE ad_click (id INT PRIMARY KEY, adId INT, clickedAt TIMESTAMP NULL) COMMENT '广告点击';
CREATE VIEW paid_orders AS SELECT o.id, o.amount, u.name FROM orders o JOIN sys_user u ON u.id = o.user_id
  WHERE o.status = 'paid';
CREATE VIEW user_secrets AS SELECT name, password AS pw, upper(password) AS shout FROM sys_user;
"""

PORTABLE_ROWS = [statement.replace("'2026-01-01 00:00:00'", "TIMESTAMP '2026-01-01 00:00:00'") for statement in ROWS]
