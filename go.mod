module github.com/flagadmin/flagadmin

go 1.26.8
